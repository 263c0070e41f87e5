//! `cuMemcpy2DAsync`: copies of rows at a pitch, between device memory (checked, every row
//! in one allocation of the current context) and host memory.

use crate::driver::{call, fail, Driver, Failure, INVALID_VALUE, NOT_SUPPORTED};
use crate::{handle, CuResult, Handle};
use std::ffi::c_void;

const HOST: u32 = 1;
const DEVICE: u32 = 2;
const UNIFIED: u32 = 4;

/// `CUDA_MEMCPY2D`.
#[repr(C)]
pub struct Memcpy2D {
    src_x: usize,
    src_y: usize,
    src_type: u32,
    src_host: *const c_void,
    src_device: u64,
    src_array: *mut c_void,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: u32,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: *mut c_void,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpy2DAsync_v2(copy: *const Memcpy2D, stream: Handle) -> CuResult {
    call("cuMemcpy2DAsync_v2", |d| {
        let stream = d.stream(handle(stream))?;
        // SAFETY: the driver API's contract: a non-null `copy` points at a `CUDA_MEMCPY2D`.
        let Some(c) = (unsafe { copy.as_ref() }) else {
            return fail(INVALID_VALUE, "a null CUDA_MEMCPY2D");
        };
        let rows = (c.width, c.height);
        let src = side(
            d,
            "source",
            (c.src_type, c.src_host as u64, c.src_device),
            (c.src_x, c.src_y, c.src_pitch),
            rows,
        )?;
        let dst = side(
            d,
            "destination",
            (c.dst_type, c.dst_host as u64, c.dst_device),
            (c.dst_x, c.dst_y, c.dst_pitch),
            rows,
        )?;
        for r in 0..c.height {
            // SAFETY: `side` checked device rows to lie in an allocation; host rows are the
            // caller's contract.
            unsafe {
                std::ptr::copy(
                    (src as *const u8).add(r * c.src_pitch),
                    (dst as *mut u8).add(r * c.dst_pitch),
                    c.width,
                )
            };
        }
        d.log(format_args!(
            "copy2d {}x{} stream={stream:#x} dst={dst:#x} src={src:#x}",
            c.width, c.height
        ));
        Ok(())
    })
}

/// The first byte of one side of a copy of `height` rows of `width` bytes, checked: its
/// memory type, host address and device address; its offset and pitch.
fn side(
    d: &Driver,
    what: &str,
    (kind, host, device): (u32, u64, u64),
    (x, y, pitch): (usize, usize, usize),
    (width, height): (usize, usize),
) -> Result<usize, Failure> {
    if height > 1 && pitch < width {
        return fail(
            INVALID_VALUE,
            format!("the {what}'s pitch {pitch} is under the width {width}"),
        );
    }
    let offset = y.checked_mul(pitch).and_then(|o| o.checked_add(x));
    let extent = height
        .saturating_sub(1)
        .checked_mul(pitch)
        .and_then(|e| e.checked_add(width));
    let (Some(offset), Some(extent)) = (offset, extent) else {
        return fail(
            INVALID_VALUE,
            format!("the {what}'s rows overflow the address space"),
        );
    };
    match kind {
        HOST if host != 0 => Ok(host as usize + offset),
        HOST => fail(INVALID_VALUE, format!("a null host {what}")),
        DEVICE | UNIFIED => Ok(d.range(device + offset as u64, extent)? as usize),
        _ => fail(
            NOT_SUPPORTED,
            format!("the fake copies no {what} of memory type {kind}"),
        ),
    }
}
