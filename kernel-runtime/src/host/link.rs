//! Modules with foreign device code: the crate's PTX followed by the pieces `kernel-build`
//! linked in (its `link_cuda` and `link_ptx`), each after a line `// kernel-build link KIND
//! NAME`. CUDA C++ pieces are compiled here with NVRTC (through cudarc, loaded at run time)
//! for the GPU's architecture, with the headers carried beside them; then the driver's linker
//! (`cuLinkCreate`, `cuLinkAddData`, `cuLinkComplete`) joins every piece into one image, which
//! is loaded as the module.

use std::ffi::{c_void, CStr, CString};

use cudarc::driver::sys;
use cudarc::nvrtc::sys as nvrtc;

use crate::host::error::Error;

/// The start of the line before each linked piece (`kernel_build::LINK_SECTION`).
const SECTION: &str = "// kernel-build link ";

/// The start of each cubin's line (`kernel_build::CUBIN_SECTION`): `// kernel-build cubin
/// sm_90 BASE64`.
const CUBIN: &str = "// kernel-build cubin ";

/// The start of each architecture-specific variant's line (`kernel_build::VARIANT_SECTION`):
/// `// kernel-build variant sm_90a BASE64`.
const VARIANT: &str = "// kernel-build variant ";

/// One linked piece: its name (the file it came from) and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// A module's text, in its pieces.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Pieces<'a> {
    /// The crate's own PTX.
    pub main: &'a str,
    /// PTX pieces.
    pub ptx: Vec<Piece<'a>>,
    /// CUDA C++ pieces.
    pub cuda: Vec<Piece<'a>>,
    /// The headers the CUDA C++ pieces include, by the names they include them by.
    pub headers: Vec<Piece<'a>>,
    /// Cubins assembled at build time: the architecture (`sm_90`) and the base64 text.
    pub cubins: Vec<Piece<'a>>,
    /// Architecture-specific builds of the crate's PTX: the architecture (`sm_90a`) and the
    /// base64 text.
    pub variants: Vec<Piece<'a>>,
}

impl<'a> Pieces<'a> {
    /// Splits a module's text at its section lines.
    pub fn of(text: &'a str) -> Self {
        let (cubins, cubins_at) = trailers(text, CUBIN);
        let (variants, variants_at) = trailers(text, VARIANT);
        let end = cubins_at.min(variants_at).min(text.len());
        Pieces {
            cubins,
            variants,
            ..Self::linked(&text[..end])
        }
    }

    /// Splits the text before the cubins at its link sections.
    fn linked(text: &'a str) -> Self {
        let mut starts = text
            .match_indices(SECTION)
            .filter(|(at, _)| *at == 0 || text.as_bytes()[at - 1] == b'\n');
        let Some((first, _)) = starts.next() else {
            return Pieces {
                main: text,
                ..Pieces::default()
            };
        };
        let mut pieces = Pieces {
            main: &text[..first],
            ..Pieces::default()
        };
        let bounds: Vec<usize> = std::iter::once(first)
            .chain(starts.map(|(at, _)| at))
            .chain(Some(text.len()))
            .collect();
        for pair in bounds.windows(2) {
            let section = &text[pair[0] + SECTION.len()..pair[1]];
            let (head, body) = section.split_once('\n').unwrap_or((section, ""));
            let (kind, name) = head.split_once(' ').unwrap_or((head, ""));
            let piece = Piece { name, text: body };
            match kind {
                "ptx" => pieces.ptx.push(piece),
                "cuda" => pieces.cuda.push(piece),
                "header" => pieces.headers.push(piece),
                _ => {}
            }
        }
        pieces
    }

    /// Whether the module needs the linker: it has foreign pieces.
    pub fn is_linked(&self) -> bool {
        !self.ptx.is_empty() || !self.cuda.is_empty()
    }

    /// The cubin for a GPU of compute capability `major.minor`, decoded: of its major version
    /// and the highest minor version up to its own (an `sm_90a` cubin only for exactly 9.0).
    /// A module with a [`variant_for`](Self::variant_for) that GPU uses the variant's cubin,
    /// of the variant's architecture, alone.
    pub fn cubin_for(&self, major: u32, minor: u32) -> Option<Vec<u8>> {
        decode(self.cubin_piece(major, minor)?.text)
    }

    /// The cubin [`cubin_for`](Self::cubin_for) decodes, still in base64.
    fn cubin_piece(&self, major: u32, minor: u32) -> Option<&Piece<'a>> {
        let cubins = self.cubins.iter();
        match self.variant_arch(major, minor) {
            Some(arch) => cubins.rev().find(|c| c.name == arch),
            None => cubins
                .filter_map(|c| Some((serves(c.name, major, minor)?, c)))
                .max_by_key(|(n, _)| *n)
                .map(|(_, c)| c),
        }
    }

    /// The PTX of the variant built for a GPU of compute capability `major.minor`, decoded,
    /// if the module has one: of exactly its architecture (`sm_90a`), or of its major version
    /// and the highest minor version up to its own (`sm_90`).
    pub fn variant_for(&self, major: u32, minor: u32) -> Option<String> {
        let arch = self.variant_arch(major, minor)?;
        let piece = self.variants.iter().find(|v| v.name == arch)?;
        String::from_utf8(decode(piece.text)?).ok()
    }

    /// What a GPU of compute capability `major.minor` loads of the module, as
    /// [`cubin_for`](Self::cubin_for) and [`variant_for`](Self::variant_for) choose (without
    /// `KERNEL_JIT=1`), or why nothing.
    pub fn code_for(&self, major: u32, minor: u32) -> Code<'a> {
        let target = ptx_target(self.main).unwrap_or(0);
        let too_new = target > 10 * major + minor;
        if self.is_linked() {
            return match too_new {
                true => Code::TooNew(target),
                false => Code::Linked(target),
            };
        }
        if let Some(cubin) = self.cubin_piece(major, minor) {
            return Code::Cubin(cubin.name);
        }
        match (self.variant_arch(major, minor), too_new) {
            (Some(arch), _) => Code::Variant(arch),
            (None, true) => Code::TooNew(target),
            (None, false) => Code::Ptx(target),
        }
    }

    /// The architecture of the variant for a GPU of compute capability `major.minor`.
    fn variant_arch(&self, major: u32, minor: u32) -> Option<&'a str> {
        self.variants
            .iter()
            .filter_map(|v| Some((serves(v.name, major, minor)?, v.name)))
            .max_by_key(|(n, _)| *n)
            .map(|(_, name)| name)
    }
}

/// The lines of `text` that start with `head`, each as a piece of its first word and the rest,
/// and where the first of them starts (`usize::MAX` where none does).
fn trailers<'a>(text: &'a str, head: &str) -> (Vec<Piece<'a>>, usize) {
    let line_start = |at: usize| at == 0 || text.as_bytes()[at - 1] == b'\n';
    let starts: Vec<usize> = text
        .match_indices(head)
        .map(|(at, _)| at)
        .filter(|&at| line_start(at))
        .collect();
    let pieces = starts
        .iter()
        .filter_map(|&at| {
            let line = text[at + head.len()..].lines().next()?;
            let (name, text) = line.split_once(' ')?;
            Some(Piece { name, text })
        })
        .collect();
    (pieces, starts.first().copied().unwrap_or(usize::MAX))
}

/// What a GPU of one compute capability runs of a module ([`Pieces::code_for`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Code<'a> {
    /// The cubin assembled at build time for this architecture (`sm_90`).
    Cubin(&'a str),
    /// The PTX of the variant for this architecture (`sm_90a`), compiled by the driver.
    Variant(&'a str),
    /// The crate's PTX, for `sm_N` (a `.target` of `N`), compiled by the driver.
    Ptx(u32),
    /// The crate's PTX for `sm_N`, linked by the driver with the foreign device code it carries.
    Linked(u32),
    /// Nothing: the PTX is for the newer `sm_N`.
    TooNew(u32),
}

/// The architecture number of PTX text's `.target` (80 for `sm_80`, 90 for `sm_90a`).
pub(crate) fn ptx_target(ptx: &str) -> Option<u32> {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target "))?
        .split(',')
        .next()?
        .trim()
        .strip_prefix("sm_")?
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .ok()
}

/// The minor version of the architecture `arch` (`sm_86`, `sm_90a`) where code for it runs on
/// a GPU of compute capability `major.minor`: of the same major version and a minor version up
/// to the GPU's, or, arch-specific (`a`), exactly the GPU's.
fn serves(arch: &str, major: u32, minor: u32) -> Option<u32> {
    let digits = arch.strip_prefix("sm_")?;
    let number: u32 = digits
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .ok()?;
    let (m, n) = (number / 10, number % 10);
    let exact = digits.ends_with(|c: char| c.is_ascii_alphabetic());
    (m == major && (n == minor || (!exact && n < minor))).then_some(n)
}

/// Base64 `text`, decoded.
fn decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// The error of a foreign piece that could not be made part of the module.
fn foreign_error(file: &str, message: impl Into<String>) -> Error {
    Error::ForeignCode {
        file: file.to_string(),
        message: message.into(),
    }
}

/// `piece` (CUDA C++) compiled by NVRTC to relocatable PTX for `arch` (`compute_90`), with
/// `headers` as the files it may include.
pub(crate) fn nvrtc_compile(piece: Piece, headers: &[Piece], arch: &str) -> Result<String, Error> {
    // SAFETY: only asks whether the library loads.
    if !unsafe { nvrtc::is_culib_present() } {
        return Err(foreign_error(
            piece.name,
            "NVRTC (libnvrtc.so) was not found to compile it at run time: install the CUDA \
             toolkit's NVRTC where the program runs (its directory on LD_LIBRARY_PATH), or build \
             where nvcc is found (KERNEL_NVCC), which compiles it to PTX at build time",
        ));
    }
    let c =
        |s: &str| CString::new(s).map_err(|_| foreign_error(piece.name, "a text holds a NUL byte"));
    let source = c(piece.text)?;
    let name = c(piece.name)?;
    let header_texts = headers
        .iter()
        .map(|h| c(h.text))
        .collect::<Result<Vec<_>, _>>()?;
    let header_names = headers
        .iter()
        .map(|h| c(h.name))
        .collect::<Result<Vec<_>, _>>()?;
    let text_ptrs: Vec<_> = header_texts.iter().map(|h| h.as_ptr()).collect();
    let name_ptrs: Vec<_> = header_names.iter().map(|h| h.as_ptr()).collect();
    let mut program = std::ptr::null_mut();
    // SAFETY: every pointer is to a live NUL-terminated string, and the two header arrays hold
    // `headers.len()` each; the program is destroyed below.
    let created = unsafe {
        nvrtc::nvrtcCreateProgram(
            &mut program,
            source.as_ptr(),
            name.as_ptr(),
            headers.len() as i32,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    };
    if created != nvrtc::nvrtcResult::NVRTC_SUCCESS {
        return Err(foreign_error(
            piece.name,
            format!("NVRTC could not take it ({created:?})"),
        ));
    }
    let result = compile_program(program, arch);
    // SAFETY: `program` was created above and is destroyed once.
    unsafe { nvrtc::nvrtcDestroyProgram(&mut program) };
    result.map_err(|message| foreign_error(piece.name, message))
}

/// Compiles the created `program` and takes its PTX, or NVRTC's log.
fn compile_program(program: nvrtc::nvrtcProgram, arch: &str) -> Result<String, String> {
    let options = [
        format!("--gpu-architecture={arch}"),
        "--relocatable-device-code=true".into(),
    ];
    let options: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()).expect("no NUL"))
        .collect();
    let pointers: Vec<_> = options.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `program` is live; the options are live NUL-terminated strings.
    let compiled =
        unsafe { nvrtc::nvrtcCompileProgram(program, pointers.len() as i32, pointers.as_ptr()) };
    if compiled != nvrtc::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!(
            "NVRTC could not compile it for {arch}:\n{}",
            program_log(program)
        ));
    }
    let mut size = 0;
    // SAFETY: `program` is compiled; `size` receives the PTX's size, NUL included.
    unsafe { nvrtc::nvrtcGetPTXSize(program, &mut size) };
    let mut ptx = vec![0u8; size];
    // SAFETY: `ptx` holds the `size` bytes NVRTC writes.
    unsafe { nvrtc::nvrtcGetPTX(program, ptx.as_mut_ptr() as *mut _) };
    let text =
        CStr::from_bytes_until_nul(&ptx).map_err(|_| "NVRTC's PTX has no end".to_string())?;
    Ok(text.to_string_lossy().into_owned())
}

/// NVRTC's log of `program`.
fn program_log(program: nvrtc::nvrtcProgram) -> String {
    let mut size = 0;
    // SAFETY: `program` is live; `size` receives the log's size, NUL included.
    unsafe { nvrtc::nvrtcGetProgramLogSize(program, &mut size) };
    let mut log = vec![0u8; size.max(1)];
    // SAFETY: `log` holds the `size` bytes NVRTC writes.
    unsafe { nvrtc::nvrtcGetProgramLog(program, log.as_mut_ptr() as *mut _) };
    CStr::from_bytes_until_nul(&log).map_or_else(
        |_| String::new(),
        |s| s.to_string_lossy().trim().to_string(),
    )
}

/// The size of the linker's logs.
const LOG_BYTES: usize = 16 * 1024;

/// Whether PTX text carries source lines (`.loc` directives, the build's `lineinfo`): the
/// driver is then asked to keep them in the machine code it makes.
pub(crate) fn has_source_lines(ptx: &str) -> bool {
    ptx.lines().any(
        |l| matches!(l.trim_start().strip_prefix(".loc"), Some(r) if r.starts_with([' ', '\t'])),
    )
}

/// Links PTX `inputs` (name, text) into one image with the driver's linker, for the GPU of the
/// context current on this thread, and returns it.
pub(crate) fn link(inputs: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    let mut errors = vec![0u8; LOG_BYTES];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_GENERATE_LINE_INFO,
    ];
    let lines = inputs.iter().any(|(_, text)| has_source_lines(text));
    let mut values = [
        errors.as_mut_ptr() as *mut c_void,
        LOG_BYTES as *mut c_void,
        usize::from(lines) as *mut c_void,
    ];
    let mut state = std::ptr::null_mut();
    // SAFETY: the options name a log buffer of LOG_BYTES that outlives the link state, which is
    // destroyed below, and a flag.
    let created =
        unsafe { sys::cuLinkCreate_v2(3, options.as_mut_ptr(), values.as_mut_ptr(), &mut state) };
    if created != sys::CUresult::CUDA_SUCCESS {
        return Err(format!("the driver's linker did not start ({created:?})"));
    }
    let result = add_and_complete(state, inputs);
    // SAFETY: `state` was created above and is destroyed once; the image was copied out.
    unsafe { sys::cuLinkDestroy(state) };
    result.map_err(|what| {
        let log = CStr::from_bytes_until_nul(&errors).map_or("", |s| s.to_str().unwrap_or(""));
        format!("{what}: {}", log.trim())
    })
}

/// Adds every input to the link `state` and completes it: the image, copied.
fn add_and_complete(state: sys::CUlinkState, inputs: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    for (name, text) in inputs {
        let data = CString::new(*text).map_err(|_| format!("`{name}` holds a NUL byte"))?;
        let c_name = CString::new(*name).map_err(|_| format!("`{name}` holds a NUL byte"))?;
        let bytes = data.as_bytes_with_nul();
        // SAFETY: `state` is live; the driver reads `bytes.len()` bytes of `data` during the call.
        let added = unsafe {
            sys::cuLinkAddData_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_PTX,
                bytes.as_ptr() as *mut c_void,
                bytes.len(),
                c_name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if added != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("linking `{name}` failed ({added:?})"));
        }
    }
    let (mut image, mut size) = (std::ptr::null_mut(), 0usize);
    // SAFETY: `state` is live and holds every input.
    let completed = unsafe { sys::cuLinkComplete(state, &mut image, &mut size) };
    if completed != sys::CUresult::CUDA_SUCCESS || image.is_null() {
        return Err(format!("linking failed ({completed:?})"));
    }
    // SAFETY: the driver gives `size` bytes at `image`, alive until `state` is destroyed.
    Ok(unsafe { std::slice::from_raw_parts(image as *const u8, size) }.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_without_sections_is_its_own_ptx() {
        let pieces = Pieces::of(".version 7.8\n.entry k()\n{}\n");
        assert_eq!(pieces.main, ".version 7.8\n.entry k()\n{}\n");
        assert!(!pieces.is_linked());
    }

    #[test]
    fn each_gpu_is_told_what_it_runs_of_a_module() {
        let module = ".version 7.8\n.target sm_80\n.entry k()\n{}\n\
                      // kernel-build cubin sm_90 QUJD\n// kernel-build variant sm_90a REVG\n";
        let pieces = Pieces::of(module);
        assert_eq!(pieces.code_for(9, 0), Code::Variant("sm_90a"));
        assert_eq!(pieces.code_for(8, 6), Code::Ptx(80));
        assert_eq!(pieces.code_for(7, 5), Code::TooNew(80));
        let cubin_only = Pieces::of(".target sm_80\n// kernel-build cubin sm_90 QUJD\n");
        assert_eq!(cubin_only.code_for(9, 0), Code::Cubin("sm_90"));
        assert_eq!(ptx_target(".target sm_90a, debug\n"), Some(90));
    }

    #[test]
    fn cubins_are_chosen_by_architecture() {
        // "QUJD" is base64 of "ABC", "REVG" of "DEF", "R0hJ" of "GHI".
        let text =
            ".entry k()\n// kernel-build cubin sm_80 QUJD\n// kernel-build cubin sm_86 REVG\n\
            // kernel-build cubin sm_90a R0hJ\n";
        let pieces = Pieces::of(text);
        assert_eq!(pieces.main, ".entry k()\n");
        assert!(!pieces.is_linked());
        assert_eq!(pieces.cubin_for(8, 0).as_deref(), Some(&b"ABC"[..]));
        assert_eq!(pieces.cubin_for(8, 9).as_deref(), Some(&b"DEF"[..]));
        assert_eq!(pieces.cubin_for(9, 0).as_deref(), Some(&b"GHI"[..]));
        assert_eq!(pieces.cubin_for(7, 5), None);
        assert_eq!(pieces.cubin_for(10, 0), None);
    }

    #[test]
    fn a_variant_and_its_cubin_serve_its_gpu_alone() {
        // "LnYgYQ==" is base64 of ".v a", "QUJD" of "ABC", "REVG" of "DEF".
        let text = ".entry k()\n// kernel-build cubin sm_90 QUJD\n\
            // kernel-build cubin sm_90a REVG\n// kernel-build variant sm_90a LnYgYQ==\n";
        let pieces = Pieces::of(text);
        assert_eq!(pieces.main, ".entry k()\n");
        assert_eq!(pieces.variant_for(9, 0).as_deref(), Some(".v a"));
        assert_eq!(pieces.cubin_for(9, 0).as_deref(), Some(&b"DEF"[..]));
        // Another Hopper, or an older GPU: the module's own PTX and cubins.
        assert_eq!(pieces.variant_for(9, 1), None);
        assert_eq!(pieces.cubin_for(9, 1).as_deref(), Some(&b"ABC"[..]));
        assert_eq!(pieces.variant_for(8, 0), None);
        // A variant without its cubin: its GPU gets the variant's PTX, not another cubin.
        let text = ".entry k()\n// kernel-build variant sm_90a LnYgYQ==\n\
            // kernel-build cubin sm_90 QUJD\n";
        let pieces = Pieces::of(text);
        assert_eq!(pieces.main, ".entry k()\n");
        assert_eq!(pieces.cubin_for(9, 0), None);
        assert_eq!(pieces.variant_for(9, 0).as_deref(), Some(".v a"));
        // A variant of a family serves its later GPUs.
        let pieces = Pieces::of(".entry k()\n// kernel-build variant sm_90 LnYgYQ==\n");
        assert_eq!(pieces.variant_for(9, 1).as_deref(), Some(".v a"));
    }

    #[test]
    fn sections_split_into_ptx_cuda_and_headers() {
        let text = ".entry k()\n\
            // kernel-build link ptx add.ptx\n.visible .func add()\n\
            // kernel-build link cuda mul.cu\n#include \"s.h\"\n\
            // kernel-build link header s.h\n#define S 2\n";
        let pieces = Pieces::of(text);
        assert_eq!(pieces.main, ".entry k()\n");
        let piece = |name, text| Piece { name, text };
        assert_eq!(pieces.ptx, [piece("add.ptx", ".visible .func add()\n")]);
        assert_eq!(pieces.cuda, [piece("mul.cu", "#include \"s.h\"\n")]);
        assert_eq!(pieces.headers, [piece("s.h", "#define S 2\n")]);
        assert!(pieces.is_linked());
    }
}
