//! Offline proofs of the GPU path: every kernel's PTX was built by rustc's nvptx64 backend, its
//! entry point takes exactly the parameters the host launcher passes (the ABI check no GPU is
//! needed for), and ptxas accepts it for sm_70, sm_80 and sm_90 without spills: a module built
//! for sm_80 (the tensor cores need it) for sm_80 and sm_90, and for sm_70 without the kernels
//! that use the tensor cores.
//!
//! Without a device toolchain the build has no PTX: these tests then say so and pass, unless
//! `KERNEL_REQUIRE_PTX=1` (as `cargo xtask test` sets), where a missing PTX fails.

mod common;

use kernel_runtime::Kernel as _;
use std::process::Command;

#[derive(Clone)]
struct Kernel {
    name: &'static str,
    ptx: Option<&'static str>,
    params: &'static [&'static str],
    reference: bool,
}

/// Each PTX entry of the kernels named (one per instance of a generic kernel).
macro_rules! kernels {
    ($($path:path => $reference:expr),* $(,)?) => {
        [$({
            use $path as k;
            k::META.instances
                .iter()
                .map(|&(name, params)| Kernel { name, ptx: k.ptx(), params, reference: $reference })
                .collect::<Vec<_>>()
        }),*]
        .concat()
    };
}

fn all() -> Vec<Kernel> {
    use gpu_kernels::*;
    use hopper_kernels::*;
    use kernel_suite::complex_kernels::*;
    use kernel_suite::gufuncs::*;
    use kernel_suite::test_kernels::*;
    use kernel_suite::warp_kernels::*;
    kernels![
        add => true, add_vectorized => true, smooth => true, smooth_strips => true, smooth_words => true, integrate2d_rows => true, integrate2d_shared => true,
        matmul_tiled => true, qs_pivots => true, qs_count => true, qs_scatter => true,
        qs_file => true, qs_copy => true, qs_sort_small => true, empty3 => false,
        grid1_ids => false, grid2_ids => false, grid3_ids => false, grid_stride_double => false,
        reverse_in_blocks => false, barrier_reductions => false, block_prefix_sum => false,
        divergent_barrier => false, off_by_one => false, unchecked_copy => false,
        atomics => false, shared_atomic_count => false, shared_float_sums => false, reverse_dynamic => false,
        saxpy_params => false, math_chain => false, math_more => false, math_more_f32 => false,
        cuda_math_all => false, fast_math_all => false, vector_mix => false,
        sum_row_parts => false, copy_row_of => false, weighted_row_sums => false,
        column_running_sums => false,
        locked_sums => false, vector_names => false,
        scale3 => false,
        rotate_with_device_barrier => false, early_exit_before_barrier => false,
        nonuniform_barrier_loop => false, exit_after_last_barrier => false,
        ids_via_device_fn => false, pair_sum => false, tile_overrun => false,
        locals_across_barrier => false, global_ids => false, uniform_steps => false,
        uniform_after_return => false, times_three_plus => false,
        warp_sums => false, shuffle_kinds => false, warp_votes => false, block_scan => false,
        partial_warps => false, shuffle_from_half => false, vote_beside_barrier => false,
        vote_without_self => false, warp_totals => false, warp_totals_unmarked => false,
        exchange_through_shared => false, exchange_after_shuffle => false,
        exchange_across_halves => false, uneven_rounds => false, block_sums => false,
        vote_after_return => false, early_leavers => false, branch_collectives => false,
        guarded_marks => false, row_two_overruns => false, random_draws_f32 => false,
        random_draws_f64 => false, random_bits => false, sum_f64 => false, max_i32 => false,
        min_f32 => false, sum_u64 => false, pi_hits => false, fill_uniform_3d => false,
        total_into_scalar => false, grid_rotate => false, grid_prefix_sums => false,
        grid_sync_skipped_by_block0 => false, grid_phase_race => false, grid_neighbours => false,
        grid_ranks => false, axpy_generic => false, widen_add => false, count_above => false,
        axpy_raw => false, grid_sync_skipped_by_threads => false, grid_sum_in_branch => false,
        grid_rotate_generic => false, convolve_taps => false, gather_lookup => false,
        scale_pairs => false, shared_window_sums => false, print_lines => false,
        print_after_barrier => false, haxpy => false, half_math => false, half_api => false, bf16_dot => false,
        half_atomic_sums => false, bounded_block_sizes => false, capped_registers => false, matmul_tensor => true,
        matmul_tensor_tf32 => true, matmul_tensor_staged => true, matmul_tensor_tf32_staged => true,
        matmul_wgmma => true, matmul_wgmma_wide => true, wg_product_n8 => false, wg_product_n64 => false,
        wg_product_n128 => false, wg_product_bf16_n64 => false, wgmma_in_two_branches => false, wgmma_from_global => false,
        dot => false, shift => false, matmul_gu => false, running_sum => false,
        last_plus_one => false, matvec => false, awkward_names => false,
        min_max => false, total_and_running => false,
        cmath_all => false, mandelbrot => false, warp_complex_sums => false,
        times_conj => false, complex_ops => false, sum_c32 => false, sum_c64 => false,
        max_u8 => false, argmax => false, fast_ops_all => false, fast_quotients => false,
        fast_rms => false, fast_ratio => false,
    ]
}

/// The kernels with PTX; `None` (after saying why) when the build has none and none is required.
fn with_ptx() -> Option<Vec<Kernel>> {
    let all = all();
    let missing: Vec<_> = all
        .iter()
        .filter(|k| k.ptx.is_none())
        .map(|k| k.name)
        .collect();
    if missing.is_empty() {
        return Some(all);
    }
    assert!(
        !common::ptx_required(),
        "KERNEL_REQUIRE_PTX=1 but these kernels have no PTX: {missing:?}"
    );
    eprintln!("skipping: this build has no PTX (no nvptx64 toolchain was found)");
    None
}

/// The `.param` declarations of entry `name` in `ptx`.
fn entry_params<'a>(ptx: &'a str, name: &str) -> Vec<&'a str> {
    let entry = entry_body(ptx, name);
    let params = &entry[entry.find('(').unwrap() + 1..];
    params[..params.find(')').expect("unterminated parameter list")]
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

fn matches_abi(param: &str, expected: &str) -> bool {
    let has = |s: &str| param.split_whitespace().any(|w| w == s);
    match expected {
        "ptr" => has(".u64") && has(".ptr"),
        "usize" | "u64" | "i64" => (has(".u64") || has(".b64")) && !has(".ptr"),
        "u32" | "i32" => has(".u32") || has(".b32"),
        "u16" | "i16" | "f16" | "bf16" => has(".u16") || has(".b16"),
        "u8" | "i8" | "bool" => has(".u8") || has(".b8"),
        "f32" => has(".f32") || has(".b32"),
        "f64" => has(".f64") || has(".b64"),
        // A by-value struct: an aligned byte array.
        _ => has(".b8") && param.contains('['),
    }
}

#[test]
fn every_entry_takes_what_the_launcher_passes() {
    let Some(kernels) = with_ptx() else { return };
    for k in &kernels {
        let params = entry_params(k.ptx.unwrap(), k.name);
        assert_eq!(
            params.len(),
            k.params.len(),
            "`{}`: PTX {params:?} vs launcher {:?}",
            k.name,
            k.params
        );
        for (p, e) in params.iter().zip(k.params) {
            assert!(
                matches_abi(p, e),
                "`{}`: PTX parameter `{p}` does not carry a `{e}`",
                k.name
            );
        }
    }
}

fn ptxas() -> Option<String> {
    if let Ok(p) = std::env::var("KERNEL_PTXAS") {
        return Some(p);
    }
    Command::new("ptxas")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "ptxas".into())
}

/// The number of an architecture name: 90 for `sm_90` and `sm_90a`.
fn sm(arch: &str) -> u32 {
    let digits: String = arch
        .trim_start_matches("sm_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("`{arch}` is no sm_NN"))
}

/// The architecture number of a module's `.target` line.
fn ptx_target(ptx: &str) -> u32 {
    let line = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .expect("a PTX module has a .target line");
    sm(line.split([',', ' ']).next().unwrap_or(line))
}

#[test]
fn ptx_targets_are_read() {
    assert_eq!(ptx_target(".version 7.8\n.target sm_90a\n"), 90);
    assert_eq!(ptx_target(".version 6.0\n.target sm_70, debug\n"), 70);
}

/// The distinct PTX modules of `kernels` (the kernels of one crate share one).
fn modules(kernels: &[Kernel]) -> Vec<&'static str> {
    let mut modules: Vec<&str> = kernels.iter().map(|k| k.ptx.unwrap()).collect();
    modules.sort();
    modules.dedup();
    modules
}

/// Assembles `file` with ptxas for `arch` (`-v`): ptxas' log, or a panic naming `what`.
fn assemble(ptxas: &str, file: &std::path::Path, arch: &str, what: &str) -> String {
    let out = Command::new(ptxas)
        .args(["-v", &format!("-arch={arch}"), "-o"])
        .arg(file.with_extension(format!("{arch}.cubin")))
        .arg(file)
        .output()
        .expect("ptxas runs");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ptxas {arch} rejected {what}:\n{log}");
    log
}

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    let Some(kernels) = with_ptx() else { return };
    let Some(ptxas) = ptxas() else {
        assert!(
            !common::ptx_required(),
            "KERNEL_REQUIRE_PTX=1 but no ptxas: set KERNEL_PTXAS or run `cargo xtask test`"
        );
        eprintln!("skipping: no ptxas (set KERNEL_PTXAS)");
        return;
    };
    // Kernels of one crate share a module: assemble each distinct module once per arch, all at
    // once (a module of the test suite's takes ptxas a quarter of a minute per arch).
    let dir = std::env::temp_dir().join(format!("kernel-ptx-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let modules = modules(&kernels);
    let mut jobs = Vec::new();
    for (m, ptx) in modules.iter().enumerate() {
        let file = dir.join(format!("module{m}.ptx"));
        std::fs::write(&file, ptx).unwrap();
        // A module built for a newer GPU (`KERNEL_PTX_ARCH`) is assembled only for GPUs from it on.
        let target = ptx_target(ptx);
        let archs = ["sm_70", "sm_80", "sm_90"].into_iter();
        jobs.extend(
            archs
                .filter(|a| sm(a) >= target)
                .map(|arch| (m, arch, file.clone())),
        );
    }
    let logs: Vec<String> = std::thread::scope(|scope| {
        let ptxas = &ptxas;
        let running: Vec<_> = jobs
            .iter()
            .map(|(m, arch, file)| {
                scope.spawn(move || assemble(ptxas, file, arch, &format!("module {m}")))
            })
            .collect();
        running
            .into_iter()
            .map(|job| job.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    for ((m, arch, _), log) in jobs.iter().zip(logs) {
        check_log(&kernels, modules[*m], arch, &log);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Checks ptxas' log of module `ptx` for `arch`: no entry takes more registers than its launch
/// bounds leave, and no reference kernel spills.
fn check_log(kernels: &[Kernel], ptx: &str, arch: &str, log: &str) {
    // "Compiling entry function 'NAME' for 'sm_XX'" ... "N bytes spill stores" ...
    // "Used N registers"
    let mut current = "";
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().unwrap_or("");
        }
        if let Some(cap) = registers_within_bounds(ptx, current) {
            let used = line.split("Used ").nth(1).and_then(|r| r.split(' ').next());
            if let Some(used) = used.and_then(|u| u.parse::<u32>().ok()) {
                assert!(used <= cap, "`{current}` takes {used} registers on {arch}, past the {cap} its launch bounds leave");
            }
        }
        if line.contains("spill stores") {
            let reference = kernels.iter().any(|k| k.reference && k.name == current);
            let spills =
                !line.contains(" 0 bytes spill stores") || !line.contains(" 0 bytes spill loads");
            assert!(
                !(reference && spills),
                "reference kernel `{current}` spills on {arch}: {line}"
            );
        }
    }
}

/// The registers a thread of entry `name` of `ptx` may take where the entry has launch bounds
/// (`.maxntid` and `.minnctapersm`: what that many blocks of that many threads leave each of
/// 65536) or a cap (`.maxnreg`), the fewer where it has both.
fn registers_within_bounds(ptx: &str, name: &str) -> Option<u32> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let head = &ptx[start..start + ptx[start..].find("\n{")?];
    let value = |directive: &str| -> Option<u32> {
        let rest = head.split(directive).nth(1)?.trim_start();
        rest.split([',', '\n']).next()?.trim().parse().ok()
    };
    let bounds = value(".maxntid").zip(value(".minnctapersm"));
    let from_bounds = bounds.map(|(threads, blocks)| 65536 / (threads * blocks));
    match (from_bounds, value(".maxnreg")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[test]
fn the_tf32_matmul_loads_a_with_ldmatrix_and_rounds_in_one_instruction() {
    let Some(kernels) = with_ptx() else { return };
    assert_instructions(
        &kernels,
        "matmul_tensor_tf32",
        &[
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
            "cvt.rna.tf32.f32",
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        ],
    );
}

#[test]
fn launch_bounds_reach_the_ptx_and_bound_the_registers() {
    let Some(kernels) = with_ptx() else { return };
    for (name, threads, blocks) in [("bounded_block_sizes", 128, 4), ("matmul_tensor", 256, 2)] {
        let body = kernel_entry(&kernels, name);
        assert!(
            body.contains(&format!(
                ")\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n{{"
            )),
            "{body}"
        );
        let ptx = kernels
            .iter()
            .find(|k| k.name == name)
            .unwrap()
            .ptx
            .unwrap();
        assert!(
            !ptx.contains("__kernel_launch_bounds_"),
            "the bounds' statics stay in {name}'s module"
        );
        assert_eq!(
            registers_within_bounds(ptx, name),
            Some(65536 / (threads * blocks))
        );
    }
    // `max_registers`: the cap alone, which ptxas keeps.
    let body = kernel_entry(&kernels, "capped_registers");
    assert!(body.contains(")\n.maxnreg 32\n{"), "{body}");
    let ptx = kernels
        .iter()
        .find(|k| k.name == "capped_registers")
        .unwrap()
        .ptx
        .unwrap();
    assert_eq!(registers_within_bounds(ptx, "capped_registers"), Some(32));
    // Each instance of a generic kernel is an entry of its own, with the kernel's bounds.
    for ty in ["f32", "f64", "i32", "u64", "f16"] {
        let body = kernel_entry(&kernels, &format!("axpy_generic__{ty}"));
        assert!(body.contains(")\n.maxntid 128, 1, 1\n{"), "{body}");
    }
}

/// Instructions newer than sm_70: the tensor cores' (`mma.sync` needs sm_80, `ldmatrix` sm_75)
/// and the asynchronous copies' (sm_80).
const SM80: [&str; 3] = ["mma.sync", "ldmatrix", "cp.async"];

/// `ptx` without its functions and entries that use an instruction of sm_80 or later
/// ([`SM80`]), retargeted to sm_70: what of a module built for a newer GPU an
/// sm_70 one could run.
fn for_sm70(ptx: &str) -> String {
    let mut out = String::new();
    let mut rest = ptx;
    // Top-level directives start a line with `.`; a function's body lines are indented.
    while !rest.is_empty() {
        let end = (item_end(rest) + 1).min(rest.len());
        let (piece, tail) = rest.split_at(end);
        let function = piece.contains(".entry ") || piece.contains(".func ");
        if !(function && SM80.iter().any(|i| piece.contains(i))) {
            out.push_str(piece);
        }
        rest = tail;
    }
    let target = out
        .lines()
        .find(|l| l.trim().starts_with(".target "))
        .map(str::to_string)
        .expect("a PTX module has a .target line");
    out.replacen(&target, ".target sm_70", 1)
}

#[test]
fn what_needs_no_newer_gpu_assembles_for_sm_70() {
    let Some(kernels) = with_ptx() else { return };
    let Some(ptxas) = ptxas() else { return };
    let dir = std::env::temp_dir().join(format!("kernel-ptx-sm70-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (m, ptx) in modules(&kernels).iter().enumerate() {
        if ptx_target(ptx) <= 70 {
            continue;
        }
        let file = dir.join(format!("module{m}.ptx"));
        let retargeted = for_sm70(ptx);
        assert!(!SM80.iter().any(|i| retargeted.contains(i)), "module {m}");
        std::fs::write(&file, &retargeted).unwrap();
        assemble(
            &ptxas,
            &file,
            "sm_70",
            &format!("module {m} without its tensor cores, ldmatrix and asynchronous copies"),
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The PTX of kernel `name` among `kernels`: [`entry_body`] in its module.
fn kernel_entry(kernels: &[Kernel], name: &str) -> &'static str {
    let k = kernels.iter().find(|k| k.name == name).unwrap();
    entry_body(k.ptx.unwrap(), name)
}

/// Asserts that the PTX of kernel `name` among `kernels` has each of `instructions`.
#[track_caller]
fn assert_instructions(kernels: &[Kernel], name: &str, instructions: &[&str]) {
    let body = kernel_entry(kernels, name);
    for instr in instructions {
        assert!(body.contains(instr), "{name} has no `{instr}`");
    }
}

/// Entry `name` in `ptx`, from its `.entry` line up to the next entry or function.
fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no `.entry {name}` in the PTX"));
    let rest = &ptx[start..];
    &rest[..item_end(rest)]
}

/// Where the top-level item (directive, entry or function) that `ptx` starts with ends: at the
/// line break before the next line that starts with `.`, but an entry's performance directives
/// (`.maxntid`, `.minnctapersm`, `.maxnreg`, between its parameters and its body), or at the
/// end.
fn item_end(ptx: &str) -> usize {
    let mut from = 1;
    while let Some(i) = ptx[from.min(ptx.len())..].find("\n.") {
        let at = from + i;
        let line = &ptx[at + 1..];
        let directive = [".maxntid", ".minnctapersm", ".maxnreg"];
        if !directive.iter().any(|d| line.starts_with(d)) {
            return at;
        }
        from = at + 1;
    }
    ptx.len()
}

#[test]
fn generalized_ufuncs_address_their_cores_in_global_memory() {
    let Some(kernels) = with_ptx() else { return };
    // Each operand's pointer is a parameter of its own, which the compiler knows to be global
    // memory; inside a struct parameter it would be read through generic addressing.
    for name in ["dot", "matmul_gu", "shift", "min_max", "total_and_running"] {
        let body = kernel_entry(&kernels, name);
        let generic = body
            .lines()
            .filter(|l| {
                let op = l.split_whitespace().next().unwrap_or("");
                (op.starts_with("ld.") || op.starts_with("st."))
                    && !op.contains(".global")
                    && !op.contains(".param")
                    && !op.contains(".local")
            })
            .count();
        assert_eq!(
            generic, 0,
            "{name} reads or writes through generic addresses"
        );
        assert_instructions(&kernels, name, &["ld.global", "st.global"]);
    }
}

#[test]
fn a_back_off_is_one_nanosleep() {
    let Some(kernels) = with_ptx() else { return };
    assert_instructions(&kernels, "locked_sums", &["nanosleep.u32"]);
}

#[test]
fn device_math_takes_the_gpus_instructions() {
    let Some(kernels) = with_ptx() else { return };
    let ptx = |name: &str| kernel_entry(&kernels, name);
    // sqrt, fused multiply-add, floor and ceil are one instruction each, and sin and cos are
    // inlined multiply-adds, as in CUDA C++ (not libm's software versions).
    assert_instructions(
        &kernels,
        "math_chain",
        &[
            "sqrt.rn.f64",
            "fma.rn.f64",
            "cvt.rmi.f64.f64",
            "cvt.rpi.f64.f64",
        ],
    );
    let integrate = ptx("integrate2d_shared");
    let fmas = integrate.matches("fma.rn.f64").count();
    // One round to the nearest quadrant per sine (the loop may be unrolled).
    let sines = integrate.matches("cvt.rni.f64.f64").count();
    assert!(
        sines >= 1 && fmas >= 10 * sines,
        "integrate2d_shared: sin should be inlined multiply-adds, found {fmas} fma.rn.f64 for \
         {sines} sines"
    );
    // One polynomial per call, its coefficients loaded by quadrant (three fmas reduce, six
    // evaluate, one finishes, one is the kernel's own), not the sine's and the cosine's both.
    assert!(
        fmas <= 11 * sines,
        "integrate2d_shared: {fmas} fma.rn.f64 for {sines} sines, as if sin evaluated two \
         polynomials"
    );
    assert!(
        integrate.contains("ld.global.nc.v2"),
        "no 16-byte coefficient-table load"
    );
}

#[test]
fn fast_intrinsics_are_the_approximate_instructions() {
    let Some(kernels) = with_ptx() else { return };
    // __fdividef, __expf, __logf, __sinf, __cosf and __saturatef as nvcc writes them; no
    // correctly rounded division or software function is left.
    assert_instructions(
        &kernels,
        "fast_math_all",
        &[
            "div.approx.f32",
            "ex2.approx.f32",
            "lg2.approx.f32",
            "sin.approx.f32",
            "cos.approx.f32",
            "cvt.sat.f32.f32",
        ],
    );
    let body = kernel_entry(&kernels, "fast_math_all");
    assert!(!body.contains("div.rn") && !body.contains("call"), "{body}");
}

#[test]
fn fastmath_bodies_are_approximate_on_f32_alone() {
    let Some(kernels) = with_ptx() else { return };
    let approximate = [
        "div.approx.f32",
        "sqrt.approx.f32",
        "ex2.approx.f32",
        "lg2.approx.f32",
        "sin.approx.f32",
        "cos.approx.f32",
    ];
    // `#[device(fastmath)]`, its `f32` instance: CUDA's fast intrinsics, no correctly rounded
    // division or square root.
    assert_instructions(&kernels, "fast_ops_all__f32", &approximate);
    let f32_body = kernel_entry(&kernels, "fast_ops_all__f32");
    // `exp` and `math::pow` each an `ex2`.
    assert_eq!(f32_body.matches("ex2.approx.f32").count(), 2, "{f32_body}");
    assert!(
        !f32_body.contains("div.rn") && !f32_body.contains("sqrt.rn"),
        "{f32_body}"
    );
    // Its `f64` instance, as written.
    assert_instructions(
        &kernels,
        "fast_ops_all__f64",
        &["div.rn.f64", "sqrt.rn.f64"],
    );
    let f64_body = kernel_entry(&kernels, "fast_ops_all__f64");
    assert!(!f64_body.contains(".approx"), "{f64_body}");
    // `#[kernel(fastmath)]`: `/`, `/=` and `sqrt`; `#[vectorize(fastmath)]` and
    // `#[guvectorize(.., fastmath)]`: `/` and `sqrt`.
    for name in ["fast_quotients", "fast_ratio", "fast_rms"] {
        assert_instructions(&kernels, name, &approximate[..2]);
        let body = kernel_entry(&kernels, name);
        let exact = body.contains("div.rn") || body.contains("sqrt.rn");
        assert!(!exact, "{name}: {body}");
    }
}

#[test]
fn vector_types_move_whole() {
    let Some(kernels) = with_ptx() else { return };
    // A `float4` read and written as one vector of four words, a `double2` as one of two double
    // words, a `uchar4` as one word.
    let body = kernel_entry(&kernels, "vector_mix");
    for vector in [".v4.b32", ".v2.b64"] {
        let (loads, stores) = memory_ops(body, vector);
        assert_eq!((loads, stores), (1, 1), "{vector}: {body}");
    }
    assert_eq!(memory_ops(body, ".b32"), (1, 0), "{body}");
    assert!(!body.contains(".u8") && !body.contains(".b8"), "{body}");
}

/// The loads and the stores of global memory in `body` of the type `ty` (`.b32`, `.v4.b32`), the
/// read-only loads (`ld.global.nc`) among them.
fn memory_ops(body: &str, ty: &str) -> (usize, usize) {
    let ops: Vec<&str> = body
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let count = |forms: &[String]| {
        ops.iter()
            .filter(|op| forms.iter().any(|f| f == *op))
            .count()
    };
    (
        count(&[format!("ld.global{ty}"), format!("ld.global.nc{ty}")]),
        count(&[format!("st.global{ty}")]),
    )
}

/// The memory instructions of `body` that name no state space (`ld.b32`, `atom.add.f32`, ...):
/// generic addressing, which the hardware resolves at run time. Statements are split at `;` and
/// `{` (inline assembly puts several on a line); a predicate guard and the memory-order and scope
/// qualifiers before the state space (`atom.relaxed.sys.global.cas`) are skipped.
fn generic_accesses(body: &str) -> Vec<&str> {
    const SPACES: [&str; 5] = ["param", "global", "shared", "local", "const"];
    const ORDERS: [&str; 10] = [
        "weak", "volatile", "relaxed", "acquire", "release", "acq_rel", "cta", "cluster", "gpu",
        "sys",
    ];
    body.split(['\n', ';', '{', '}'])
        .map(str::trim)
        .filter(|statement| {
            let mut words = statement.split_whitespace();
            let mut op = words.next().unwrap_or("");
            if op.starts_with('@') {
                op = words.next().unwrap_or("");
            }
            let mut parts = op.split('.');
            matches!(parts.next(), Some("ld" | "st" | "atom" | "red"))
                && !parts
                    .find(|q| !ORDERS.contains(q))
                    .is_some_and(|space| SPACES.contains(&space))
        })
        .collect()
}

/// The PTX of kernel `name`, after checking that none of its memory instructions is generic.
fn without_generic_accesses(kernels: &[Kernel], name: &str) -> &'static str {
    let body = kernel_entry(kernels, name);
    let generic = generic_accesses(body);
    assert!(
        generic.is_empty(),
        "{name} reaches memory through generic addresses: {generic:?}"
    );
    body
}

#[test]
fn atomics_name_their_state_space() {
    let Some(kernels) = with_ptx() else { return };
    // Integer atomics through `core::sync::atomic`, float adds written out, on global and shared
    // memory: none generic.
    for name in [
        "atomics",
        "shared_atomic_count",
        "shared_float_sums",
        "qs_count",
        "qs_scatter",
        "qs_file",
    ] {
        let body = without_generic_accesses(&kernels, name);
        assert!(body.contains("atom."), "{name} has no atomics");
    }
    // The quicksort's buckets counted in shared memory, claimed in global memory.
    for name in ["qs_count", "qs_scatter"] {
        assert_instructions(
            &kernels,
            name,
            &["atom.shared.add.u32", "atom.global.add.u32"],
        );
    }
    assert_instructions(
        &kernels,
        "atomics",
        &["atom.global.add.f32", "atom.global.add.f64"],
    );
    assert_instructions(
        &kernels,
        "shared_float_sums",
        &["atom.shared.add.f32", "atom.shared.add.f64"],
    );
    // A half-precision add is one instruction from sm_70 on (bf16's from sm_90 on; before, a
    // compare-and-swap loop).
    without_generic_accesses(&kernels, "half_atomic_sums");
    assert_instructions(&kernels, "half_atomic_sums", &["atom.global.add.noftz.f16"]);
}

#[test]
fn half_precision_arithmetic_is_the_gpus_own() {
    let Some(kernels) = with_ptx() else { return };
    // `a * x[i] + y[i]` in f16: PTX's conversions and rounded operations, one each, not
    // `half`'s software conversions (301 instructions in all where they were used).
    assert_instructions(&kernels, "haxpy", &["mul.rn.f16", "add.rn.f16"]);
    let body = kernel_entry(&kernels, "haxpy");
    let count = body
        .lines()
        .filter(|l| l.starts_with('\t') && !l.trim_start().starts_with("//"))
        .count();
    assert!(count < 60, "haxpy has {count} instructions:\n{body}");
    assert!(
        !body.contains("fma.rn.f16"),
        "haxpy's two roundings were fused"
    );
    // The math functions convert with one instruction each way.
    assert_instructions(&kernels, "half_math", &["cvt.f32.f16", "cvt.rn.f16.f32"]);
}

#[test]
fn shared_arrays_are_addressed_as_shared_memory() {
    let Some(kernels) = with_ptx() else { return };
    // Every kernel with shared arrays (static, 2-D and dynamic, plain and atomic accesses).
    for name in [
        "matmul_tiled",
        "integrate2d_shared",
        "qs_pivots",
        "qs_count",
        "qs_scatter",
        "qs_sort_small",
        "reverse_in_blocks",
        "reverse_dynamic",
        "block_prefix_sum",
        "shared_atomic_count",
        "shared_float_sums",
        "rotate_with_device_barrier",
    ] {
        let body = without_generic_accesses(&kernels, name);
        assert!(body.contains("ld.shared."), "{name} has no ld.shared");
    }
}

#[test]
fn smooth_strips_loads_a_whole_strip_at_once() {
    let Some(kernels) = with_ptx() else { return };
    let body = kernel_entry(&kernels, "smooth_strips");
    // The whole-strip loops unrolled: three loads for each of its rows and the two around it (the
    // shorter last strip's loop adds some), and the row sums in registers, not in local memory.
    let loads = body.matches("ld.global.").count();
    let rows = gpu_kernels::STRIP_ROWS + 2;
    assert!(loads >= 3 * rows, "{loads} global loads for {rows} rows");
    assert!(
        !body.contains(".local"),
        "smooth_strips keeps its sums in local memory"
    );
}

#[test]
fn smooth_words_moves_whole_words() {
    let Some(kernels) = with_ptx() else { return };
    let body = kernel_entry(&kernels, "smooth_words");
    // Every access is one 32-bit word: three loads per row of a whole strip (unrolled, in
    // registers), one store per row; none of a single byte.
    let loads = body.matches("ld.global.b32").count();
    let rows = gpu_kernels::STRIP_ROWS + 2;
    assert!(loads >= 3 * rows, "{loads} word loads for {rows} rows");
    assert_eq!(
        body.matches("ld.global.").count() + body.matches("st.global.").count(),
        loads + body.matches("st.global.b32").count(),
        "smooth_words has an access narrower or wider than a word"
    );
    assert!(
        !body.contains(".local"),
        "smooth_words keeps its sums in local memory"
    );
}

#[test]
fn products_feeding_sums_fuse_into_multiply_adds() {
    let Some(kernels) = with_ptx() else { return };
    if std::env::var("KERNEL_FMA").is_ok_and(|v| v.trim() == "0") {
        eprintln!("skipping: KERNEL_FMA=0 turns contraction off");
        return;
    }
    let body = kernel_entry(&kernels, "matmul_tiled");
    // `acc += sa[[ty, q]] * sb[[q, tx]]`, unrolled over the 16-wide tile: one fma each.
    assert_eq!(body.matches("fma.rn.f32").count(), 16, "{body}");
    assert!(!body.contains("mul.rn.f32"), "{body}");
}

#[test]
fn warp_primitives_are_single_instructions() {
    let Some(kernels) = with_ptx() else { return };
    let ptx = |name: &str| kernel_entry(&kernels, name);
    // Each kind of shuffle, a 64-bit one as two 32-bit halves; no shuffle goes through memory.
    let kinds = ptx("shuffle_kinds");
    for (instr, count) in [
        ("shfl.sync.idx.b32", 5),
        ("shfl.sync.up.b32", 1),
        ("shfl.sync.down.b32", 1),
        ("shfl.sync.bfly.b32", 1),
    ] {
        let found = kinds.matches(instr).count();
        assert_eq!(found, count, "shuffle_kinds: {found} `{instr}`");
    }
    assert!(
        !kinds.contains(".local"),
        "shuffle_kinds spills to local memory"
    );
    assert_instructions(
        &kernels,
        "warp_votes",
        &[
            "vote.sync.ballot.b32",
            "vote.sync.all.pred",
            "vote.sync.any.pred",
            "vote.sync.uni.pred",
            "match.any.sync.b32",
            "match.all.sync.b32",
            "%laneid",
        ],
    );
    assert_instructions(
        &kernels,
        "partial_warps",
        &["activemask.b32", "bar.warp.sync"],
    );
    // The shuffles of a `#[device]` function are inlined into its kernel.
    assert!(ptx("warp_totals").contains("shfl.sync.bfly.b32"));
    // A `Complex32` moves as its two parts, in registers: five steps of two shuffles.
    let complex = ptx("warp_complex_sums");
    assert_eq!(complex.matches("shfl.sync.down.b32").count(), 10);
    assert!(!complex.contains(".local"), "warp_complex_sums spills");
}

/// A constant array is read with `ld.const` and a global one with `ld.global.nc` where `get`
/// reads them, and their variables are declared in the module with their sizes.
#[test]
fn module_arrays_are_read_through_their_caches() {
    let Some(kernels) = with_ptx() else { return };
    let ptx = kernels
        .iter()
        .find(|k| k.name == "convolve_taps")
        .unwrap()
        .ptx
        .unwrap();
    let body = |name: &str| entry_body(ptx, name);
    assert!(body("convolve_taps").contains("ld.const.b32"));
    assert!(body("gather_lookup").contains("ld.global.nc.b32"));
    assert!(ptx.contains(".visible .const .align 4 .b8 __kernel_const_TAPS[20];"));
    assert!(ptx.contains(".visible .global .align 4 .b8 __kernel_global_LOOKUP[4000];"));
}

/// A module's text cut at `kernel_build::LINK_SECTION` lines: the crate's PTX, then each piece
/// as (kind, name, text).
fn module_pieces(module: &str) -> (&str, Vec<(&str, &str, &str)>) {
    let marker = format!("\n{}", kernel_build::LINK_SECTION);
    let mut parts = module.split(marker.as_str());
    let main = parts.next().unwrap_or_default();
    let pieces = parts
        .map(|part| {
            let (head, text) = part.split_once('\n').unwrap_or((part, ""));
            let (kind, name) = head.split_once(' ').unwrap_or((head, ""));
            (kind, name, text)
        })
        .collect();
    (main, pieces)
}

/// The foreign-function saxpy's module links: rustc's PTX declares `mul_f32_f32` and
/// `add_f32_f32` `.extern` and calls them; the PTX of `ptx/add.ptx`, and of `cuda/mul.cu`
/// (from nvcc at build time, or compiled here by NVRTC as the runtime would, its header from
/// the include directory), define them; ptxas compiles each relocatable and nvlink joins them
/// for sm_80 and sm_90 (the link tools of CUDA 13, which start at sm_75). Without `mul.cu`
/// the link fails on its undefined reference, so this check can tell.
#[test]
fn foreign_device_code_links_with_nvlink() {
    let Some(module) = foreign_kernels::saxpy_foreign.ptx() else {
        assert!(!common::ptx_required(), "KERNEL_REQUIRE_PTX=1 but no PTX");
        return;
    };
    let (main, pieces) = module_pieces(module);
    let words = main.split_whitespace().collect::<Vec<_>>().join(" ");
    for name in ["mul_f32_f32", "add_f32_f32"] {
        let declared = format!(".extern .func (.param .b32 func_retval0) {name} (");
        assert!(words.contains(&declared), "{name} is not declared extern");
        assert!(
            words.contains(&format!("{name}, (param0, param1);")),
            "{name} is not called"
        );
    }
    let Ok(nvlink) = std::env::var("KERNEL_NVLINK") else {
        eprintln!("skipping the link: no nvlink (set KERNEL_NVLINK, as `cargo xtask test` does)");
        return;
    };
    // SAFETY: only asks whether the library loads.
    let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    if pieces.iter().any(|(kind, ..)| *kind == "cuda") && !nvrtc {
        eprintln!("skipping the link: no NVRTC on LD_LIBRARY_PATH (`cargo xtask test` sets one)");
        return;
    }
    let ptxas = std::path::Path::new(&nvlink).with_file_name("ptxas");
    let dir = std::env::temp_dir().join(format!("kernel-link-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut inputs = vec![("main".to_string(), main.to_string())];
    for (kind, name, text) in &pieces {
        match *kind {
            "ptx" => inputs.push((name.to_string(), text.to_string())),
            "cuda" => inputs.push((name.to_string(), nvrtc_ptx(name, text))),
            _ => {}
        }
    }
    assert_eq!(
        inputs.len(),
        3,
        "the module links add.ptx and mul.cu: {pieces:?}"
    );
    for arch in ["sm_80", "sm_90"] {
        let objects: Vec<_> = inputs
            .iter()
            .map(|(name, ptx)| {
                let (ptx_file, object) = (
                    dir.join(format!("{name}.ptx")),
                    dir.join(format!("{name}.o")),
                );
                std::fs::write(&ptx_file, ptx).unwrap();
                let out = Command::new(&ptxas)
                    .args(["-c", &format!("-arch={arch}"), "-o"])
                    .arg(&object)
                    .arg(&ptx_file)
                    .output()
                    .expect("ptxas runs");
                assert!(
                    out.status.success(),
                    "ptxas {arch} {name}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                object
            })
            .collect();
        let link = |objects: &[std::path::PathBuf]| {
            Command::new(&nvlink)
                .arg(format!("-arch={arch}"))
                .args(objects)
                .arg("-o")
                .arg(dir.join("linked.cubin"))
                .output()
                .expect("nvlink runs")
        };
        let out = link(&objects);
        assert!(
            out.status.success(),
            "nvlink {arch}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let without_mul: Vec<_> = objects
            .iter()
            .filter(|o| !o.ends_with("mul.cu.o"))
            .cloned()
            .collect();
        let out = link(&without_mul);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && log.contains("Undefined reference to 'mul_f32_f32'"),
            "{log}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The PTX of the CUDA C++ piece `name`: as nvcc left it, or compiled by NVRTC here, relocatable,
/// for the oldest architecture the link tools take.
fn nvrtc_ptx(name: &str, source: &str) -> String {
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/foreign-kernels/cuda/include");
    let options = cudarc::nvrtc::CompileOptions {
        include_paths: vec![include.into()],
        arch: Some("compute_75"),
        options: vec!["--relocatable-device-code=true".into()],
        name: Some(name.into()),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(source, options)
        .unwrap_or_else(|e| panic!("NVRTC compiles {name} (libnvrtc on LD_LIBRARY_PATH, as `cargo xtask test` sets): {e:?}"))
        .to_src()
}

/// The one basic block of `body` (the PTX between its `$L__BB` labels) that `pick` holds of:
/// an entry's interior tile. Fails where there is not exactly one, saying `what` it looked for.
#[track_caller]
fn the_block<'a>(body: &'a str, what: &str, pick: impl Fn(&str) -> bool) -> &'a str {
    let blocks: Vec<&str> = body.split("$L__BB").filter(|b| pick(b)).collect();
    assert_eq!(blocks.len(), 1, "{what} in {} blocks", blocks.len());
    blocks[0]
}

/// The smooth stencil's interior tile of 4 × 4 `i8` reads its window in words: in one basic block,
/// six word loads (a row each, the tile's four bytes and the byte on each side of them in the
/// words beside) and twelve byte loads (the bytes beside the tile), all at once, and stores each
/// row of four outputs as one word, packed by three byte permutes; its window and outputs stay
/// in registers.
#[test]
fn smooth_stencil_reads_its_window_in_words() {
    use kernel_runtime::Kernel;
    let Some(ptx) = gpu_kernels::smooth_stencil.ptx() else {
        assert!(!common::ptx_required(), "smooth_stencil has no PTX");
        return;
    };
    let body = entry_body(ptx, "smooth_stencil");
    let loads = |block: &str, kind: &str| block.matches(&format!("ld.global.{kind}")).count();
    let window = the_block(body, "smooth_stencil loads words", |b| loads(b, "b32") > 0);
    assert_eq!(loads(window, "b32"), 6, "{window}");
    assert_eq!(loads(window, "s8"), 12, "{window}");
    assert_eq!(window.matches("st.global.b32").count(), 4, "{window}");
    assert_eq!(window.matches("prmt.b32").count(), 12, "{window}");
    assert!(!body.contains(".local"), "smooth_stencil uses local memory");
}

/// The 7-point Laplacian's interior tile of 4 planes × 4 rows reads each element it needs once,
/// in one basic block: the 6 × 6 columns around its points but their 4 corners (32 loads) and
/// each point's neighbours on the row (32), then stores its 16 points; nothing goes to local
/// memory.
#[test]
fn laplace3d_reads_its_tile_of_planes_once() {
    use kernel_runtime::Kernel;
    let Some(ptx) = gpu_kernels::laplace3d.ptx() else {
        assert!(!common::ptx_required(), "laplace3d has no PTX");
        return;
    };
    let body = entry_body(ptx, "laplace3d");
    let count = |block: &str, what: &str| block.matches(what).count();
    let tile = the_block(body, "laplace3d stores 16 points", |b| {
        count(b, "st.global") == 16
    });
    assert_eq!(count(tile, "ld.global"), 64, "{tile}");
    assert!(!body.contains(".local"), "laplace3d uses local memory");
}

/// The smooth stencil sums its bytes and divides by 9 in 32-bit registers: the device build
/// keeps LLVM from narrowing the division to 16 bits, which ptxas emulates with byte permutes
/// (for sm_90, 25.5 instructions a pixel against 17.4). An LLVM older than 21 cannot be told.
#[test]
fn smooth_stencil_divides_in_32_bits() {
    use kernel_runtime::Kernel;
    let Some(ptx) = gpu_kernels::smooth_stencil.ptx() else {
        assert!(!common::ptx_required(), "smooth_stencil has no PTX");
        return;
    };
    let llvm = kernel_build::Toolchain::discover()
        .ok()
        .and_then(|t| t.llvm);
    if llvm.is_none_or(|v| v < 21) {
        eprintln!("skipped: the device toolchain's LLVM ({llvm:?}) narrows divisions");
        return;
    }
    let body = entry_body(ptx, "smooth_stencil");
    let narrow: Vec<&str> = body.lines().filter(|l| l.contains("%rs")).collect();
    assert!(
        narrow.is_empty(),
        "smooth_stencil has {} lines of 16-bit registers, such as {:?}",
        narrow.len(),
        &narrow[..narrow.len().min(3)]
    );
    assert!(body.contains("mul.hi.s32"), "no 32-bit division by 9");
}

/// The PTX of `module`'s variant for `arch` (`// kernel-build variant ARCH BASE64`).
fn variant_of(module: &str, arch: &str) -> Option<String> {
    use base64::Engine;
    let head = format!("{}{arch} ", kernel_build::VARIANT_SECTION);
    let line = module.lines().find_map(|l| l.strip_prefix(head.as_str()))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line)
        .ok()?;
    String::from_utf8(bytes).ok()
}

#[test]
fn the_warpgroup_matmuls_run_their_depth_back_to_back_on_sm_90a() {
    use kernel_runtime::Kernel;
    let Some(module) = hopper_kernels::matmul_wgmma.ptx() else {
        assert!(!common::ptx_required(), "matmul_wgmma has no PTX");
        return;
    };
    let kernels = [
        ("matmul_wgmma", "m64n128k16.f32.f16.f16"),
        ("matmul_wgmma_wide", "m64n256k16.f32.f16.f16"),
        ("matmul_wgmma_tf32", "m64n128k8.f32.tf32.tf32"),
    ];
    // The crate's own module (sm_80) has no warpgroup MMA; its sm_90a variant does.
    let ptx = variant_of(module, "sm_90a").expect("hopper-kernels builds an sm_90a variant");
    assert_eq!(ptx_target(&ptx), 90);
    assert!(ptx.contains(".target sm_90a"));
    for (name, shape) in kernels {
        assert!(!entry_body(module, name).contains("wgmma."));
        let mma = format!("wgmma.mma_async.sync.aligned.{shape}");
        let body = entry_body(&ptx, name);
        assert_eq!(
            body.matches(&mma).count(),
            4,
            "{name}: a staged tile's four steps"
        );
    }
    let Some(ptxas) = ptxas() else {
        assert!(!common::ptx_required(), "KERNEL_REQUIRE_PTX=1 but no ptxas");
        return;
    };
    let dir = std::env::temp_dir().join(format!("kernel-wgmma-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("variant.ptx");
    std::fs::write(&file, &ptx).unwrap();
    let log = assemble(&ptxas, &file, "sm_90a", "the sm_90a variant");
    std::fs::remove_dir_all(&dir).ok();
    // ptxas serializes the products where the accumulators pass through memory or other
    // registers between them, and says so.
    assert!(!log.contains("Performance Loss"), "{log}");
    for (name, _) in kernels {
        let ours = log
            .split(&format!("Compiling entry function '{name}'"))
            .nth(1)
            .unwrap();
        let ours = ours.split("Compiling entry function").next().unwrap();
        assert!(ours.contains(" 0 bytes spill stores"), "{name}: {ours}");
        assert!(
            !ours.contains("stack size"),
            "{name}'s accumulators in local memory: {ours}"
        );
    }
}

/// `inspect_ptx` (Numba's `kernel.inspect_asm()`) gives a kernel's entries, every instance's,
/// with no other kernel's, and a module ptxas assembles by itself: whatever the entries call or
/// name (device functions, shared memory, `vprintf`'s prototype, constant tables) came along.
#[test]
fn a_kernels_own_ptx_is_its_entries_and_what_they_use() {
    use gpu_kernels::*;
    use kernel_runtime::Kernel;
    use kernel_suite::complex_kernels::*;
    use kernel_suite::test_kernels::*;

    fn listed<K: Kernel>(k: K) -> Option<(String, Vec<&'static str>, &'static str)> {
        let instances = K::META.instances.iter().map(|&(e, _)| e).collect();
        Some((k.inspect_ptx().ok()?, instances, k.ptx()?))
    }
    let Some(_) = with_ptx() else { return };
    let listings = [
        listed(add),
        listed(matmul_tiled),
        listed(reverse_dynamic),
        listed(print_lines),
        listed(fast_ops_all),
        listed(pi_hits),
        listed(mandelbrot),
        listed(math_chain),
    ];
    let ptxas = ptxas();
    let dir = std::env::temp_dir().join(format!("kernel-listing-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut calls = 0;
    for (n, listing) in listings.into_iter().enumerate() {
        let (text, instances, module) = listing.expect("a kernel with PTX has a listing");
        calls += text.matches("\n.func ").count();
        let entries = text.matches(".entry ").count();
        assert_eq!(entries, instances.len(), "{instances:?}:\n{text}");
        for entry in &instances {
            assert!(
                text.contains(&format!(".entry {entry}(")),
                "{entry}:\n{text}"
            );
        }
        assert!(
            text.starts_with(".version ") && text.len() < module.len() / 2,
            "{text}"
        );
        let Some(ptxas) = &ptxas else { continue };
        let file = dir.join(format!("listing{n}.ptx"));
        std::fs::write(&file, &text).unwrap();
        let arch = format!("sm_{}", ptx_target(&text).max(80));
        assemble(
            ptxas,
            &file,
            &arch,
            &format!("the listing of {instances:?}"),
        );
    }
    std::fs::remove_dir_all(&dir).ok();
    // `vprintf`'s prototype, the panic path's declaration and definition, libm's functions.
    assert!(
        calls >= 2,
        "no listing holds the functions its entries call"
    );
    assert!(
        ptxas.is_some() || !common::ptx_required(),
        "KERNEL_REQUIRE_PTX=1 but no ptxas: set KERNEL_PTXAS or run `cargo xtask test`"
    );
}

/// `inspect_sass` (Numba's `kernel.inspect_sass()`): a kernel's machine code for an
/// architecture, with no GPU, from its own PTX: `add`'s for sm_90 is its function alone, with
/// its loads and its store; a kernel calling foreign device code shows the call.
#[test]
fn a_kernels_sass_is_its_own_machine_code() {
    use gpu_kernels::{add, matmul_tiled};
    let Some(_) = with_ptx() else { return };
    if std::env::var_os("KERNEL_NVDISASM").is_none() || ptxas().is_none() {
        eprintln!("skipping: no nvdisasm or ptxas (set KERNEL_NVDISASM and KERNEL_PTXAS, as `cargo xtask test` does)");
        return;
    }
    let sass = add.inspect_sass("sm_90").unwrap();
    assert!(
        sass.contains(".text.add:") && sass.contains("LDG.E") && sass.contains("STG.E"),
        "{sass}"
    );
    assert_eq!(sass.matches("STO_CUDA_ENTRY").count(), 1, "{sass}");
    let tiled = matmul_tiled.inspect_sass("sm_80").unwrap();
    assert!(
        tiled.contains("BAR.SYNC") && tiled.contains("LDS"),
        "{tiled}"
    );
    // A call of foreign device code, whose body is linked in at load time, stays a call.
    let foreign = foreign_kernels::saxpy_foreign
        .inspect_sass("sm_80")
        .unwrap();
    assert!(
        foreign.contains("CALL") && foreign.contains("mul_f32_f32"),
        "{foreign}"
    );
    let err = add.inspect_sass("sm_9").unwrap_err().to_string();
    assert!(err.starts_with("`ptxas`"), "{err}");
}

/// Each crate's module is in the program once, however many kernels and code units embed it:
/// each kernel embeds it as a C string (the NUL in the file kernel-build writes), whose copies
/// the linker merges. A form of the embedding without the NUL kept a copy per code unit (15 more
/// in this binary).
#[test]
fn each_module_is_in_the_program_once() {
    let Some(_) = with_ptx() else { return };
    let mut distinct: Vec<&str> = kernel_runtime::__rt::PTX_MODULES.to_vec();
    distinct.sort();
    distinct.dedup();
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    // Made here, so that the binary does not hold the line itself.
    let header = format!("// Generated by LLVM {} Back-End", "NVPTX").into_bytes();
    let starts: Vec<usize> = exe
        .windows(header.len())
        .enumerate()
        .filter(|(_, w)| *w == header)
        .map(|(at, _)| at)
        .collect();
    for module in distinct {
        let lead = module.find("// Generated").expect("an LLVM module");
        let copies = starts
            .iter()
            .filter(|&&at| at >= lead && exe[at - lead..].starts_with(module.as_bytes()))
            .count();
        assert_eq!(copies, 1, "copies of the module of {} bytes", module.len());
    }
}
