//! add-list: `c = a + b`, one thread per element (Numba's `@vectorize` over float32), and
//! [`add_wide`], the same sum with [`ADD_WIDE`] elements per thread.

use kernel_runtime::prelude::*;
#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{ndarray::Ix1, Error, PinnedArray, Stream};

/// `c[i] = a[i] + b[i]` for every `i` below `c.len()`.
#[kernel]
pub fn add(a: &[f32], b: &[f32], c: &mut [f32]) {
    let i = grid(1);
    if i < c.len() {
        c[i] = a[i] + b[i];
    }
}

/// Elements per thread of [`add_wide`].
pub const ADD_WIDE: usize = 4;

/// `c[i] = a[i] + b[i]` for every `i` below `c.len()`, [`ADD_WIDE`] elements per thread:
/// thread `t` of a grid of `s` threads takes `t`, `t + s`, `t + 2s` and `t + 3s`, then (where
/// the grid is smaller than a quarter of the elements) `t + 4s`, `t + 5s` and on, one at a time.
///
/// A thread's four loads of each array go out together (a warp's load is still 128 contiguous
/// bytes), so each thread has four times the bytes in flight of [`add`]'s. One element per
/// thread leaves the memory waiting: on an H200 it moves about 80 % of a device-to-device
/// copy's bandwidth, and this the copy's own. The four are one step, not a loop's body: a loop
/// of them keeps twelve pointers live, twice the registers, and half the threads fit. Launch
/// `LaunchConfig::cover(n.div_ceil(ADD_WIDE), tpb)`:
///
/// ```
/// use gpu_kernels::{add_wide, ADD_WIDE};
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::cpu();
/// let a: Vec<f32> = (0..1000).map(|i| i as f32).collect();
/// let (da, db) = (dev.to_device(&a)?, dev.to_device(&a)?);
/// let mut dc = dev.zeros::<f32, _>(1000)?;
/// let cfg = LaunchConfig::cover(1000usize.div_ceil(ADD_WIDE), 256)?;
/// add_wide.launch_with(cfg, (&da, &db, &mut dc))?;
/// assert_eq!(dc.to_vec()?[999], 1998.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[kernel]
pub fn add_wide(a: &[f32], b: &[f32], c: &mut [f32]) {
    let n = c.len();
    let s = gridsize(1);
    let mut i = grid(1);
    if i + 3 * s < n {
        let (a0, a1, a2, a3) = (a[i], a[i + s], a[i + 2 * s], a[i + 3 * s]);
        let (b0, b1, b2, b3) = (b[i], b[i + s], b[i + 2 * s], b[i + 3 * s]);
        c[i] = a0 + b0;
        c[i + s] = a1 + b1;
        c[i + 2 * s] = a2 + b2;
        c[i + 3 * s] = a3 + b3;
        i += 4 * s;
    }
    while i < n {
        c[i] = a[i] + b[i];
        i += s;
    }
}

/// add-list in the form of Numba's original program, `@vectorize(["float32(float32, float32)"],
/// target='cuda')`: `add_vectorized.apply((&a, &b), &mut c)` or `add_vectorized.call((&a, &b))`.
#[vectorize]
pub fn add_vectorized(a: f32, b: f32) -> f32 {
    a + b
}

/// add-list from page-locked host arrays to one, in chunks of `chunk` elements through the `S`
/// streams `streams`, the pattern CUDA programs use to hide their copies: chunk `k` is copied
/// in, added and copied out on stream `k % S`, into that stream's own device buffers, so that
/// while one stream copies chunk `k + 1` in, another runs the kernel on chunk `k` and a third
/// copies chunk `k - 1` out. It returns once everything is queued; reading `c` waits for it.
///
/// ```
/// use gpu_kernels::add_chunked;
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::cpu();
/// let (mut a, mut b) = (dev.pinned::<f32, _>(1000)?, dev.pinned::<f32, _>(1000)?);
/// a.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
/// b.fill(1.0);
/// let mut c = dev.pinned::<f32, _>(1000)?;
/// let streams = [dev.stream()?, dev.stream()?, dev.stream()?];
/// add_chunked(&a, &b, &mut c, 128, &streams)?;
/// assert_eq!(c[999], 1000.0);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::ShapeMismatch`] where the arrays' lengths differ, and the errors of the copies and
/// launches. A `chunk` of 0 is taken as 1.
#[cfg(not(target_arch = "nvptx64"))]
pub fn add_chunked<const S: usize>(
    a: &PinnedArray<f32, Ix1>,
    b: &PinnedArray<f32, Ix1>,
    c: &mut PinnedArray<f32, Ix1>,
    chunk: usize,
    streams: &[Stream; S],
) -> Result<(), Error> {
    const { assert!(S > 0, "add_chunked needs at least one stream") };
    let chunk = chunked("add_chunked", a, b, c, chunk)?;
    let (n, dev) = (c.len(), c.device().clone());
    let mut buffers = Vec::with_capacity(S);
    for _ in 0..S.min(n.div_ceil(chunk)) {
        let (da, db) = (dev.empty::<f32, _>(chunk)?, dev.empty::<f32, _>(chunk)?);
        buffers.push((da, db, dev.empty::<f32, _>(chunk)?));
    }
    for (k, start) in (0..n).step_by(chunk).enumerate() {
        let (s, (da, db, dc)) = (&streams[k % S], &mut buffers[k % S]);
        let r = start..(start + chunk).min(n);
        s.upload(a.slice(r.clone())?, &mut *da)?;
        s.upload(b.slice(r.clone())?, &mut *db)?;
        add.launch_with(on(s, r.len())?, (&*da, &*db, &mut *dc))?;
        s.download(dc, c.slice_mut(r)?)?;
    }
    Ok(())
}

/// [`add_chunked`] with one device array for each of `a`, `b` and `c`, as CUDA's classic
/// example of overlap has it: chunk `k` of each is copied in, added and copied out on stream
/// `k % S`. The streams are ordered by the bytes they use, so the chunks overlap as there;
/// the device holds the whole arrays where [`add_chunked`] holds `S` chunks of each.
///
/// ```
/// use gpu_kernels::add_streamed;
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::cpu();
/// let (mut a, mut b) = (dev.pinned::<f32, _>(1000)?, dev.pinned::<f32, _>(1000)?);
/// a.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
/// b.fill(1.0);
/// let mut c = dev.pinned::<f32, _>(1000)?;
/// let streams = [dev.stream()?, dev.stream()?, dev.stream()?];
/// add_streamed(&a, &b, &mut c, 128, &streams)?;
/// assert_eq!(c[999], 1000.0);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
///
/// # Errors
/// As [`add_chunked`]'s.
#[cfg(not(target_arch = "nvptx64"))]
pub fn add_streamed<const S: usize>(
    a: &PinnedArray<f32, Ix1>,
    b: &PinnedArray<f32, Ix1>,
    c: &mut PinnedArray<f32, Ix1>,
    chunk: usize,
    streams: &[Stream; S],
) -> Result<(), Error> {
    const { assert!(S > 0, "add_streamed needs at least one stream") };
    let chunk = chunked("add_streamed", a, b, c, chunk)?;
    let (n, dev) = (c.len(), c.device().clone());
    let (mut da, mut db) = (dev.empty::<f32, _>(n)?, dev.empty::<f32, _>(n)?);
    let mut dc = dev.empty::<f32, _>(n)?;
    for (k, start) in (0..n).step_by(chunk).enumerate() {
        let (s, r) = (&streams[k % S], start..(start + chunk).min(n));
        s.upload(a.slice(r.clone())?, da.slice_mut(r.clone())?)?;
        s.upload(b.slice(r.clone())?, db.slice_mut(r.clone())?)?;
        let (x, y) = (da.slice(r.clone())?, db.slice(r.clone())?);
        add.launch_with(on(s, r.len())?, (x, y, dc.slice_mut(r.clone())?))?;
        s.download(dc.slice(r.clone())?, c.slice_mut(r)?)?;
    }
    Ok(())
}

/// The chunk size of a chunked add-list (`chunk`, at least 1), after checking that `a` and `b`
/// have `c`'s length.
#[cfg(not(target_arch = "nvptx64"))]
fn chunked(
    function: &str,
    a: &PinnedArray<f32, Ix1>,
    b: &PinnedArray<f32, Ix1>,
    c: &PinnedArray<f32, Ix1>,
    chunk: usize,
) -> Result<usize, Error> {
    let n = c.len();
    for (what, x) in [("a", a), ("b", b)] {
        if x.len() != n {
            return Err(Error::ShapeMismatch {
                what: format!("argument `{what}` of {function} (`c`'s length is the one expected)"),
                expected: vec![n],
                found: vec![x.len()],
            });
        }
    }
    Ok(chunk.clamp(1, n.max(1)))
}

/// The launch of `add` over `len` elements on stream `s`.
#[cfg(not(target_arch = "nvptx64"))]
fn on(s: &Stream, len: usize) -> Result<LaunchConfig, Error> {
    let cfg = LaunchConfig::cover(len, 256).map_err(|reason| Error::InvalidLaunch {
        kernel: "add",
        reason,
    })?;
    Ok(cfg.on_stream(s))
}
