//! What happens when a kernel breaks a rule: an index out of bounds, a divergent barrier.
//!
//! On the GPU a fault traps (the launch then fails, naming the kernel); on the CPU backend it
//! stops the launch with an error naming the kernel, the array, the index, the shape, the block
//! and the thread.

pub use crate::base::AccessKind;

/// Reports an index outside an array's shape and stops the thread (in checked mode, as a
/// [`Finding`](crate::cpu::finding::Finding)).
#[cold]
#[inline(never)]
#[track_caller]
#[cfg(not(target_arch = "nvptx64"))]
pub fn out_of_bounds(array: &'static str, index: &[usize], shape: &[usize], kind: AccessKind) -> ! {
    let at = core::panic::Location::caller();
    if crate::cpu::check::who().block != 0 {
        crate::cpu::fault::raise_finding(crate::cpu::finding::Finding::OutOfBounds {
            array,
            index: index.to_vec(),
            shape: shape.to_vec(),
            access: crate::cpu::check::current_access(kind, Some(at)),
        })
    }
    crate::cpu::fault::raise_with_coordinates(format!(
        "index {} is out of bounds of array `{array}` with shape {shape:?} at {at}",
        crate::cpu::finding::signed_index(index)
    ))
}

/// Reports an index outside an array's shape and stops the thread: on the GPU, a trap.
#[cold]
#[inline(always)]
#[cfg(target_arch = "nvptx64")]
pub fn out_of_bounds(
    _array: &'static str,
    _index: &[usize],
    _shape: &[usize],
    _kind: AccessKind,
) -> ! {
    trap()
}

/// Reports a slice `start..end` of the first axis of an array of `len` such `unit`s (elements,
/// rows, planes) that does not lie in it, and stops the thread: on the GPU, a trap.
#[cold]
#[cfg_attr(not(target_arch = "nvptx64"), inline(never), track_caller)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
pub fn bad_slice(
    array: &'static str,
    start: usize,
    end: usize,
    len: usize,
    unit: &'static str,
) -> ! {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::fault::raise_with_coordinates(format!(
        "slice {start}..{end} does not lie in array `{array}` of {len} {unit} at {}",
        core::panic::Location::caller()
    ));
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (array, start, end, len, unit);
        trap()
    }
}

/// Reports entry `i` of an axis of `len` such `unit`s (`rows`, `planes`, `columns`) asked for
/// as a `part` (`subarray`, `column`), and stops the thread: on the GPU, a trap.
#[cold]
#[cfg_attr(not(target_arch = "nvptx64"), inline(never), track_caller)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
pub fn bad_part(
    part: &'static str,
    array: &'static str,
    i: usize,
    len: usize,
    unit: &'static str,
) -> ! {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::fault::raise_with_coordinates(format!(
        "{part} {i} does not lie in array `{array}` of {len} {unit} at {}",
        core::panic::Location::caller()
    ));
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (part, array, i, len, unit);
        trap()
    }
}

/// Reports a view of dynamic shared memory at byte `at` that does not lie in its `bytes` or is
/// not aligned to `align`, and stops the thread: on the GPU, a trap.
#[cold]
#[cfg_attr(not(target_arch = "nvptx64"), inline(never), track_caller)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
pub fn bad_shared_offset(array: &'static str, at: usize, bytes: usize, align: usize) -> ! {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::fault::raise_with_coordinates(format!(
        "`{array}` at byte {at} of the dynamic shared memory does not lie in its {bytes} bytes \
         at a multiple of its elements' alignment, {align}, at {}",
        core::panic::Location::caller()
    ));
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (array, at, bytes, align);
        trap()
    }
}

/// Reports an asynchronous copy from `src` to `dst` that breaks a rule of
/// [`pipeline`](crate::pipeline) (`why`), and stops the thread: on the GPU, a trap.
#[cold]
#[cfg_attr(not(target_arch = "nvptx64"), inline(never), track_caller)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
pub fn misplaced_copy(dst: &'static str, src: &'static str, why: &'static str) -> ! {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::fault::raise_with_coordinates(format!(
        "memcpy_async from `{src}` to `{dst}` at {}: {why}; a copy goes from global memory to a \
         shared array, its rows starting at a multiple of its 4, 8 or 16 bytes",
        core::panic::Location::caller()
    ));
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (dst, src, why);
        trap()
    }
}

/// Reports a block copy `op` (`memcpy_async_tile`) whose block has `block` threads where the
/// copy shares its tile's runs among `threads`, and stops the thread: on the GPU, a trap.
#[cold]
#[cfg_attr(not(target_arch = "nvptx64"), inline(never), track_caller)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
pub fn tile_threads(op: &'static str, block: usize, threads: usize) -> ! {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::fault::raise_with_coordinates(format!(
        "{op} at {}: the block has {block} threads, and the copy shares its tile's runs among \
         THREADS = {threads}: every thread of a block of THREADS makes the call",
        core::panic::Location::caller()
    ));
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (op, block, threads);
        trap()
    }
}

/// Reports a `wgmma::mma_async` whose tiles do not lie in `a` and `b` as shared arrays of 8
/// columns, and stops the thread: on the GPU, a trap.
#[cold]
#[cfg_attr(not(target_arch = "nvptx64"), inline(never), track_caller)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
pub fn misplaced_operands(a: &'static str, b: &'static str) -> ! {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::fault::raise_with_coordinates(format!(
        "wgmma::mma_async of `{a}` and `{b}` at {}: each must be a shared array of 8 columns \
         from a multiple of 16 bytes, holding the tile laid out as a_place and b_place say, the \
         rows of A from a multiple of 64 and the columns of B from a multiple of 8",
        core::panic::Location::caller()
    ));
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (a, b);
        trap()
    }
}

/// Reports an `ldmatrix_sync` from `array` whose rows do not lie in shared memory at multiples
/// of 16 bytes, and stops the thread: on the GPU, a trap.
#[cold]
#[cfg_attr(not(target_arch = "nvptx64"), inline(never), track_caller)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
pub fn misplaced_rows(array: &'static str) -> ! {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::fault::raise_with_coordinates(format!(
        "ldmatrix_sync from `{array}` at {}: each row of the tile must start at a multiple of 16 \
         bytes of a shared array (rows of a multiple of 8 elements, the tile at a column that \
         is a multiple of 8)",
        core::panic::Location::caller()
    ));
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = array;
        trap()
    }
}

/// Aborts the kernel: `trap` on the GPU, an error from the launch on the CPU backend.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions; it ends the kernel.
    unsafe { core::arch::nvptx::trap() }
}

/// Aborts the kernel: `trap` on the GPU, an error from the launch on the CPU backend.
#[cfg(not(target_arch = "nvptx64"))]
#[cold]
pub fn trap() -> ! {
    crate::cpu::fault::raise_with_coordinates("the kernel called trap()".to_string())
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    trap()
}

/// Stops the CPU launch that reached a foreign device function (`#[device(extern)]`) declared
/// without a Rust body for the CPU backend, naming it.
#[cold]
#[inline(never)]
#[cfg(not(target_arch = "nvptx64"))]
pub fn foreign_without_cpu_body(symbol: &'static str) -> ! {
    crate::cpu::fault::raise_with_coordinates(format!(
        "foreign device function `{symbol}` has no CPU body: its body is CUDA C++ or PTX, which \
         runs on a GPU only; name a Rust function of its signature for the CPU backend with \
         `#[device(extern, cpu = path)]`"
    ))
}
