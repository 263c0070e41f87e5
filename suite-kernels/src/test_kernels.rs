//! Kernels of the test suite: each exercises one part of the device API. They live in the
//! library (not in `tests/`) so that the build-time compiler turns them into PTX too and the
//! same suite runs on every backend.

use kernel_runtime::prelude::*;
use kernel_runtime::random::{
    xoroshiro128p_next, xoroshiro128p_normal_f32, xoroshiro128p_normal_f64,
    xoroshiro128p_uniform_f32, xoroshiro128p_uniform_f64, Xoroshiro128pState,
};
use kernel_runtime::vector::{F32x4, F64x2, U8x4};

/// Writes `grid(1)` and `gridsize(1)` of every thread.
#[kernel]
pub fn grid1_ids(ids: &mut [u32], sizes: &mut [u32]) {
    let i = grid(1);
    if i < ids.len() {
        ids[i] = i as u32;
        sizes[i] = gridsize(1) as u32;
    }
}

/// A spin lock on `lock[0]` with a back-off (`nanosleep`), taken by one thread of each block
/// at a time, which adds its block's index to `total[0]` by a read and a write (atomic each,
/// so that checked mode, which knows no locks, sees no race) that the lock keeps whole:
/// `total[0]` ends as the sum of the block indices.
#[kernel]
pub fn locked_sums(lock: &mut [u32], total: &mut [u32]) {
    if thread_idx().x == 0 {
        while atomic_cas(&lock, 0, 0, 1) != 0 {
            nanosleep(100);
        }
        let t = atomic_add(&total, 0, 0);
        atomic_exch(&total, 0, t + block_idx().x);
        threadfence();
        atomic_exch(&lock, 0, 0);
    }
}

/// Writes each thread's block size at its index `grid(1)`, in blocks of at most 128 threads (its
/// launch bounds), four of them to be resident on a multiprocessor.
#[kernel(launch_bounds = (128, 4))]
pub fn bounded_block_sizes(sizes: &mut [u32], scale: u32) {
    let i = grid(1);
    if i < sizes.len() {
        sizes[i] = scale * block_dim().x;
    }
}

/// Several float functions of each element, each thread's registers capped at 32
/// (`max_registers`, more than ptxas would give it otherwise): what does not fit spills.
#[kernel(max_registers = 32)]
pub fn capped_registers(x: &mut [f64]) {
    let i = grid(1);
    if i < x.len() {
        let v = x[i];
        x[i] = v.exp() * v.sin() + v.cos() / (1.0 + v.tan().abs()) + v.cbrt();
    }
}

/// Writes, at `[y, x]` of the grid, the flat index `y * width + x` from `grid(2)`.
#[kernel]
pub fn grid2_ids(out: &mut Array2<u32>) {
    let (x, y) = grid(2);
    let (h, w) = out.dim();
    let (gx, gy) = gridsize(2);
    if y < h && x < w && gx >= w && gy >= h {
        out[[y, x]] = (y * w + x) as u32;
    }
}

/// Writes, at `[z, y, x]`, the flat index from `grid(3)`, and checks the coordinates against
/// `block_idx() * block_dim() + thread_idx()`.
#[kernel]
pub fn grid3_ids(out: &mut Array3<u32>) {
    let (x, y, z) = grid(3);
    let (t, b, d) = (thread_idx(), block_idx(), block_dim());
    let same = x == (b.x * d.x + t.x) as usize
        && y == (b.y * d.y + t.y) as usize
        && z == (b.z * d.z + t.z) as usize;
    let (nz, ny, nx) = out.dim();
    if z < nz && y < ny && x < nx {
        out[[z, y, x]] = if same {
            ((z * ny + y) * nx + x) as u32
        } else {
            u32::MAX
        };
    }
}

/// A grid-stride loop: `out[i] = 2 * x[i]` with fewer threads than elements.
#[kernel]
pub fn grid_stride_double(x: &[i64], out: &mut [i64]) {
    let mut i = grid(1);
    while i < x.len() {
        out[i] = 2 * x[i];
        i += gridsize(1);
    }
}

/// Numba's `part = x[i, j, lo:hi]` and `out[i][j] = ...` in a kernel: each thread sums part of
/// one row of a 3-D array through a subarray, a row and a slice of its views, and writes the sum
/// through a row of `out` taken from a slice of it.
#[kernel]
pub fn sum_row_parts(x: &Array3<i64>, lo: usize, hi: usize, out: &mut Array2<i64>) {
    let (j, i) = grid(2);
    let (n, m) = out.dim();
    if i < n && j < m {
        let part = x.subarray(i).row(j).slice(lo..hi);
        let mut row = out.slice(i..).subarray(0u32);
        row[j] = part.iter().sum();
    }
}

/// `out[i]` = the sum of `(k + 1) * x[i][k]`, row `i` walked backwards, Numba's
/// `for k, v in enumerate(x[i])`: a kernel's array as an iterator.
#[kernel]
pub fn weighted_row_sums(x: &Array2<u32>, out: &mut [u32]) {
    let i = grid(1);
    if i < out.len() {
        let mut total = 0;
        for (k, &v) in x.row(i).into_iter().enumerate().rev() {
            total += (k as u32 + 1) * v;
        }
        out[i] = total;
    }
}

/// `out[:, j]` = the running sums down column `j` of `x`, thread `j` of the grid taking column
/// `j + shift`: Numba's `c = out[:, j]; for i, v in enumerate(x[:, j]): ...` in a kernel.
#[kernel]
pub fn column_running_sums(x: &Array2<u32>, shift: u32, out: &mut Array2<u32>) {
    let j = grid(1);
    if j < out.dim().1 {
        let mut c = out.column(j + shift as usize);
        let mut total = 0;
        for (i, &v) in x.column(j).into_iter().enumerate() {
            total += v;
            c[i] = total;
        }
    }
}

/// Numba's `out[k] = x[p:][0][i][k]`: row `i` of the first plane from `p` on, which must lie
/// within `x`; `out` may be longer than a row.
#[kernel]
pub fn copy_row_of(x: &Array3<u32>, p: u32, i: u32, out: &mut [u32]) {
    let k = grid(1);
    let row = x.slice(p as usize..).subarray(0u32).row(i);
    if k < row.len() {
        out[k] = row[k];
    }
}

/// CUDA's vector types as array elements: `out[i] = x[i] * a + float4(b[i])` with a `uchar4`
/// widened, and `dout[i] = (d.x, d.x + d.y)` of a `double2`; each vector read and written whole
/// (`ld.global.nc.v4.f32`, `st.global.v2.f64`, ...).
#[kernel]
pub fn vector_mix(
    a: f32,
    x: &[F32x4],
    b: &[U8x4],
    d: &[F64x2],
    out: &mut [F32x4],
    dout: &mut [F64x2],
) {
    let i = grid(1);
    if i < out.len() {
        let p = b[i];
        out[i] = x[i] * a + F32x4::new(p.x as f32, p.y as f32, p.z as f32, p.w as f32);
        let mut v = d[i];
        v.y += v.x;
        dout[i] = v;
    }
}

/// Reverses each block's chunk of `data` through a shared array (barrier between the phases).
#[kernel]
pub fn reverse_in_blocks(data: &mut [i32]) {
    let mut tile = shared_array![i32; 128];
    let t = thread_idx().x as usize;
    let n = block_dim().x as usize;
    let i = grid(1);
    if i < data.len() {
        tile[t] = data[i];
    }
    sync_threads();
    let base = block_idx().x as usize * n;
    let j = base + (n - 1 - t);
    if i < data.len() && j < data.len() {
        data[i] = tile[n - 1 - t];
    }
}

/// Per block: `out[3b..3b+3]` = `sync_threads_count`, `_and`, `_or` of `pred[i] != 0`.
#[kernel]
pub fn barrier_reductions(pred: &[u8], out: &mut [i32]) {
    let i = grid(1);
    let p = i < pred.len() && pred[i] != 0;
    let count = sync_threads_count(p);
    let all = sync_threads_and(p);
    let any = sync_threads_or(p);
    if thread_idx().x == 0 {
        let b = block_idx().x as usize;
        out[3 * b] = count;
        out[3 * b + 1] = all as i32;
        out[3 * b + 2] = any as i32;
    }
}

/// A barrier inside a loop whose trip count every thread agrees on: a running prefix sum
/// (Hillis–Steele) of each block's chunk.
#[kernel]
pub fn block_prefix_sum(data: &mut [u32]) {
    let mut s = shared_array![u32; 256];
    let t = thread_idx().x as usize;
    let i = grid(1);
    s[t] = if i < data.len() { data[i] } else { 0 };
    sync_threads();
    let mut offset = 1;
    while offset < block_dim().x as usize {
        let v = if t >= offset { s[t - offset] } else { 0 };
        sync_threads();
        s[t] += v;
        sync_threads();
        offset *= 2;
    }
    if i < data.len() {
        data[i] = s[t];
    }
}

/// A barrier only the first half of the block reaches; the second half skips it and leaves,
/// and counts as arrived then, as on a GPU.
#[kernel]
pub fn divergent_barrier(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    if t < block_dim().x as usize / 2 {
        sync_threads();
    }
    if t < out.len() {
        out[t] = 1;
    }
}

/// Reads one element past the end of `x` in the last thread.
#[kernel]
pub fn off_by_one(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i <= x.len() {
        out[0] = x[i];
    }
}

/// The same read without index checks: the kernel's author promises indices are in bounds.
#[kernel(boundscheck = false)]
pub fn unchecked_copy(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        out[i] = x[i];
    }
}

/// Every atomic operation on `i32` / `u32` / `u64` / `f32` / `f64` cells.
#[kernel]
pub fn atomics(
    ints: &mut [i32],
    uints: &mut [u32],
    wide: &mut [u64],
    floats: &mut [f32],
    doubles: &mut [f64],
) {
    let i = grid(1) as i32;
    atomic_add(&ints, 0, 1);
    atomic_sub(&ints, 1, 1);
    atomic_max(&ints, 2, i);
    atomic_min(&ints, 3, i);
    atomic_or(&uints, 0, 1u32 << (i % 32));
    atomic_and(&uints, 1, !(1u32 << (i % 32)));
    atomic_xor(&uints, 2, 1);
    atomic_inc(&uints, 3, 9);
    atomic_dec(&uints, 4, 9);
    atomic_exch(&uints, 5, 7);
    atomic_cas(&uints, 6, 0, i as u32 + 1);
    atomic_add(&wide, 0, 1u64 << 33);
    atomic_add(&floats, 0, 0.5);
    atomic_max(&floats, 1, i as f32);
    atomic_add(&doubles, 0, 0.25);
    atomic_min(&doubles, 1, -(i as f64));
}

/// [`atomics`] on shared arrays, per block of 64 threads, from the same starting values: thread
/// 0 copies the block's results to `ints[4b..]`, `uints[7b..]`, `floats[2b..]`, and each
/// thread's `ranks[i]` is the old value its `atomic_add` on a shared counter returned.
#[kernel]
pub fn shared_atomics(ints: &mut [i32], uints: &mut [u32], floats: &mut [f32], ranks: &mut [u32]) {
    let mut si = shared_array![i32; 4];
    let mut su = shared_array![u32; 8];
    let mut sf = shared_array![f32; 2];
    let t = thread_idx().x as usize;
    if t == 0 {
        (si[0], si[1], si[2], si[3]) = (0, 0, i32::MIN, i32::MAX);
        for k in 0..8 {
            su[k] = if k == 1 { u32::MAX } else { 0 };
        }
        (sf[0], sf[1]) = (0.0, f32::MIN);
    }
    sync_threads();
    let i = t as i32;
    atomic_add(&si, 0, 1);
    atomic_sub(&si, 1, 1);
    atomic_max(&si, 2, i);
    atomic_min(&si, 3, i);
    atomic_or(&su, 0, 1u32 << (i % 32));
    atomic_and(&su, 1, !(1u32 << (i % 32)));
    atomic_xor(&su, 2, 1);
    atomic_inc(&su, 3, 9);
    atomic_dec(&su, 4, 9);
    atomic_exch(&su, 5, 7);
    atomic_cas(&su, 6, 0, i as u32 + 1);
    ranks[grid(1)] = atomic_add(&su, 7, 1);
    atomic_add(&sf, 0, 0.5);
    atomic_max(&sf, 1, i as f32);
    sync_threads();
    if t == 0 {
        let b = block_idx().x as usize;
        for k in 0..4 {
            ints[4 * b + k] = si[k];
        }
        for k in 0..7 {
            uints[7 * b + k] = su[k];
        }
        for k in 0..2 {
            floats[2 * b + k] = sf[k];
        }
    }
}

/// CUDA's integer intrinsics under their names, per element: `out[5i..5i + 5]` holds
/// `popc`, `brev`, `clz`, `ffs` of `x[i]` and `selp` of its parity, and `wide[2i..2i + 2]`
/// `popc` and `ffs` of `x[i]` as an `i64` shifted up 20 bits.
#[kernel]
pub fn cuda_intrinsics(x: &[u32], out: &mut [u32], wide: &mut [u32]) {
    let i = grid(1);
    if i < x.len() {
        let v = x[i];
        out[5 * i] = popc(v);
        out[5 * i + 1] = brev(v);
        out[5 * i + 2] = clz(v);
        out[5 * i + 3] = ffs(v);
        out[5 * i + 4] = selp(v % 2 == 0, 10, 20);
        threadfence_system();
        let w = (v as i64) << 20;
        wide[2 * i] = popc(w);
        wide[2 * i + 1] = ffs(w);
    }
}

/// A 3-D shared array: each thread of a `(8, 4, 2)` block stores its linear index at
/// `[z, y, x]`, then reads the element mirrored along every axis, `[1 - z, 3 - y, 7 - x]`, into
/// `out[[b, z, y, x]]`.
#[kernel]
pub fn shared_mirror3(out: &mut Array2<u32>) {
    let mut s = shared_array![u32; [2, 4, 8]];
    let t = thread_idx();
    let (x, y, z) = (t.x as usize, t.y as usize, t.z as usize);
    s[[z, y, x]] = (z * 32 + y * 8 + x) as u32;
    sync_threads();
    let b = block_idx().x as usize;
    out[[b, z * 32 + y * 8 + x]] = s[[1 - z, 3 - y, 7 - x]];
}

/// Shared arrays of `bool`s, 1-D and 2-D: thread `t` of a block of 256 marks whether `t` is a
/// prime, in `prime[t]` and in `table[[t % 16, t / 16]]`; after the barrier,
/// `counts[[b, t]]` is `1000 ×` the primes up to `t` plus the primes congruent to `t` mod 16.
#[kernel]
pub fn shared_primes(counts: &mut Array2<u32>) {
    let t = thread_idx().x as usize;
    let mut prime = shared_array![bool; 256];
    let mut table = shared_array![bool; [16, 16]];
    prime[t] = t >= 2;
    let mut d = 2;
    while d * d <= t {
        prime[t] &= t % d != 0;
        d += 1;
    }
    table[[t % 16, t / 16]] = prime[t];
    sync_threads();
    let mut below = 0;
    for k in 0..=t {
        below += prime[k] as u32;
    }
    let mut row = 0;
    for c in 0..table.dim().1 {
        row += table[[t % 16, c]] as u32;
    }
    counts[[block_idx().x as usize, t]] = 1000 * below + row;
}

/// The sum of the values of a block of 64 threads, through a shared array of the function's
/// own: one per block, the same array in every call.
#[device]
pub fn block_total(v: u32) -> u32 {
    let t = thread_idx().x as usize;
    let mut part = shared_array![u32; 64];
    part[t] = v;
    sync_threads();
    let mut total = 0;
    for k in 0..64 {
        total += part[k];
    }
    sync_threads(); // before another call writes `part`
    total
}

/// The value of the thread across the diagonal of an 8 × 8 block (thread `t` at row `t / 8`,
/// column `t % 8`), plus 1000 where that value is odd: 2-D shared arrays of a device function,
/// of numbers and of `bool`s.
#[device]
pub fn across_diagonal(v: u32) -> u32 {
    let t = thread_idx().x as usize;
    let mut values = shared_array![u32; [8, 8]];
    let mut odd = shared_array![bool; [8, 8]];
    values[[t / 8, t % 8]] = v;
    odd[[t / 8, t % 8]] = v % 2 == 1;
    sync_threads();
    let (r, c) = (t % 8, t / 8);
    let out = values[[r, c]] + if odd[[r, c]] { 1000 } else { 0 };
    sync_threads();
    out
}

/// Device functions' shared arrays, over blocks of 64 threads: `out[[0, i]]` and
/// `out[[1, i]]` the block's sums of `x` and `2 x` (two calls of one function), `out[[2, i]]`
/// the value across the diagonal.
#[kernel(barriers)]
pub fn device_shared(x: &[u32], out: &mut Array2<u32>) {
    let i = grid(1);
    let first = block_total(x[i]);
    let second = block_total(2 * x[i]);
    let across = across_diagonal(x[i]);
    out[[0, i]] = first;
    out[[1, i]] = second;
    out[[2, i]] = across;
}

/// The block's value in a device function's array: thread 0 stores `keep` where given; after
/// the barrier every thread reads it.
#[device]
pub fn kept(keep: Option<u32>) -> u32 {
    let mut slot = shared_array![u32; 1];
    if let Some(v) = keep {
        if thread_idx().x == 0 {
            slot[0] = v;
        }
    }
    sync_threads();
    let v = slot[0];
    sync_threads();
    v
}

/// Each block keeps `10 b + 1` in a device function's array across a grid barrier: the blocks
/// of a cooperative launch, alive at once, have an array each. `out[[0, i]]` and `out[[1, i]]`
/// are what thread `i` read before and after the barrier.
#[kernel(barriers)]
pub fn grid_kept(out: &mut Array2<u32>) {
    let i = grid(1);
    let before = kept(Some(10 * block_idx().x + 1));
    grid_sync();
    let after = kept(None);
    out[[0, i]] = before;
    out[[1, i]] = after;
}

/// Three arrays carved from one dynamic shared allocation of `12 n` bytes for a block of `n`
/// threads: `f32`s `0..n` and `n..2n`, as Numba's `dyn[0:n]` and `dyn[n:2*n]`, then `u32`s from
/// byte `8n`, as CUDA's `(unsigned *)(s + 8 * n)`. Thread `t` writes `t`, `2t` and `3t`; after
/// the barrier `out[[b, 3t..3t + 3]]` reads them back at the mirrored thread `n - 1 - t`.
#[kernel]
pub fn carved_shared(out: &mut Array2<u32>) {
    let t = thread_idx().x as usize;
    let n = block_dim().x as usize;
    let all = dynamic_shared![f32];
    let (mut a, mut b) = (all.slice(0..n), all.slice(n..2 * n));
    let mut c = dynamic_shared![u32; at 8 * n];
    a[t] = t as f32;
    b[t] = 2.0 * t as f32;
    c[t] = 3 * t as u32;
    sync_threads();
    let (m, row) = (n - 1 - t, block_idx().x as usize);
    out[[row, 3 * t]] = a[m] as u32;
    out[[row, 3 * t + 1]] = b[m] as u32;
    out[[row, 3 * t + 2]] = c[m];
}

/// A `u32` view of the dynamic shared memory at byte `at`, and a slice `0..len` of it.
#[kernel]
pub fn shared_view_at(at: u32, len: u32, out: &mut [u32]) {
    let v = dynamic_shared![u32; at at as usize].slice(0..len as usize);
    if thread_idx().x == 0 {
        out[0] = v.len() as u32;
    }
}

/// Dynamic shared memory as rows of `cols` elements (`View1::rows`): each thread writes its
/// index at `[t / cols, t % cols]`, and after the barrier reads the element of the next row
/// (the last row's from the first) into `out[0]`; thread 0 writes the rows' shape into `out[1]`.
#[kernel]
pub fn shared_rows(cols: u32, out: &mut Array2<u32>) {
    let mut m = dynamic_shared![u32].rows(cols as usize);
    let t = thread_idx().x as usize;
    let (n, c) = m.dim();
    if t < n * c {
        m[[t / c, t % c]] = t as u32;
    }
    sync_threads();
    if t < n * c {
        out[[0, t]] = m[[(t / c + 1) % n, t % c]];
    }
    if t == 0 {
        out[[1, 0]] = n as u32;
        out[[1, 1]] = c as u32;
    }
}

/// The dynamic shared memory [`declared_shared`] declares: 40 KiB.
pub const DECLARED_SHARED: usize = 40 * 1024;

/// The length of the dynamic shared memory a launch gives, as `u32`s, into `out[0]`: the kernel
/// declares [`DECLARED_SHARED`] bytes, which a launch that gives none or fewer gets.
#[kernel(dynamic_shared = DECLARED_SHARED)]
pub fn declared_shared(out: &mut [u32]) {
    let v = dynamic_shared![u32];
    if grid(1) == 0 {
        out[0] = v.len() as u32;
    }
}

/// A kernel that declares more dynamic shared memory than any GPU gives a block (1 MiB): every
/// launch of it is refused before it runs.
#[kernel(dynamic_shared = 1 << 20)]
pub fn declared_too_much(out: &mut [u32]) {
    let v = dynamic_shared![u32];
    if grid(1) == 0 {
        out[0] = v.len() as u32;
    }
}

/// Numba's NaN rules of the float atomics: each thread applies `values[i]` to eight cells with
/// `atomic_max`, `atomic_min`, `atomic_nanmax` and `atomic_nanmin`, twice over (cells `0..4` and
/// `4..8`, which the host starts at different values).
#[kernel]
pub fn nan_atomics(cells: &mut [f32], values: &[f32]) {
    let i = grid(1);
    if i < values.len() {
        let v = values[i];
        for base in [0, 4] {
            atomic_max(&cells, base, v);
            atomic_min(&cells, base + 1, v);
            atomic_nanmax(&cells, base + 2, v);
            atomic_nanmin(&cells, base + 3, v);
        }
    }
}

/// [`nan_atomics`] on `f64` cells of shared memory, per block, which thread 0 starts at
/// `start[..8]` and copies to `cells[8b..]` at the end.
#[kernel]
pub fn shared_nan_atomics(cells: &mut [f64], start: &[f64], values: &[f64]) {
    let mut s = shared_array![f64; 8];
    let t = thread_idx().x as usize;
    if t == 0 {
        for k in 0..8 {
            s[k] = start[k];
        }
    }
    sync_threads();
    let i = grid(1);
    if i < values.len() {
        let v = values[i];
        for base in [0, 4] {
            atomic_max(&s, base, v);
            atomic_min(&s, base + 1, v);
            atomic_nanmax(&s, base + 2, v);
            atomic_nanmin(&s, base + 3, v);
        }
    }
    sync_threads();
    if t == 0 {
        let b = block_idx().x as usize;
        for k in 0..8 {
            cells[8 * b + k] = s[k];
        }
    }
}

/// Per block, counts with an atomic in shared memory, then one thread adds it to the total.
#[kernel]
pub fn shared_atomic_count(flags: &[u8], total: &mut [u32]) {
    let mut c = shared_array![u32; 1];
    let t = thread_idx().x;
    if t == 0 {
        c[0] = 0;
    }
    sync_threads();
    let i = grid(1);
    if i < flags.len() && flags[i] != 0 {
        atomic_add(&c, 0, 1);
    }
    sync_threads();
    if t == 0 {
        atomic_add(&total, 0, c[0]);
    }
}

/// Per block, sums its values with float atomics on shared `f32` and `f64` cells, then one
/// thread writes the block's two sums.
#[kernel]
pub fn shared_float_sums(x: &[f32], sums: &mut [f32], wide: &mut [f64]) {
    let mut s = shared_array![f32; 1];
    let mut d = shared_array![f64; 1];
    let t = thread_idx().x;
    if t == 0 {
        s[0] = 0.0;
        d[0] = 0.0;
    }
    sync_threads();
    let i = grid(1);
    if i < x.len() {
        atomic_add(&s, 0, x[i]);
        atomic_sub(&d, 0, f64::from(x[i]));
    }
    sync_threads();
    if t == 0 {
        let b = block_idx().x as usize;
        sums[b] = s[0];
        wide[b] = d[0];
    }
}

/// Reverses each block's chunk through dynamic shared memory sized at launch.
#[kernel]
pub fn reverse_dynamic(data: &mut [f64]) {
    let mut tile = dynamic_shared![f64];
    let t = thread_idx().x as usize;
    let n = block_dim().x as usize;
    let i = grid(1);
    if t < tile.len() && i < data.len() {
        tile[t] = data[i];
    }
    sync_threads();
    let j = block_idx().x as usize * n + n - 1 - t;
    if i < data.len() && j < data.len() {
        data[i] = tile[n - 1 - t];
    }
}

/// Parameters of [`saxpy_params`]: a `#[repr(C)]` struct passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, DeviceCopy)]
pub struct Affine {
    /// Scale.
    pub a: f32,
    /// Offset.
    pub b: f32,
    /// Whether to apply.
    pub on: bool,
}

/// A struct without padding whose fields take any bits: `#[derive(DeviceCopy)]` makes it
/// `AnyBitPattern`, so it may live in shared memory and uncleared arrays.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
pub struct Pair {
    /// A count.
    pub n: u32,
    /// A value.
    pub x: f32,
}

/// Each block's thread `t` writes `pairs[i]` with its neighbour's pair, passed through a shared
/// array of structs.
#[kernel]
pub fn swap_pairs(pairs: &mut [Pair]) {
    let mut tile = shared_array![Pair; 64];
    let t = thread_idx().x as usize;
    let i = grid(1);
    if i < pairs.len() {
        tile[t] = pairs[i];
    }
    sync_threads();
    let other = t ^ 1;
    let j = i ^ 1;
    if i < pairs.len() && j < pairs.len() {
        pairs[i] = tile[other];
    }
}

/// A device function, callable from kernels and from host code.
#[device]
pub fn apply(p: Affine, x: f32) -> f32 {
    if p.on {
        p.a.mul_add(x, p.b)
    } else {
        x
    }
}

/// `out[i] = apply(p, x[i])`: a struct parameter and a device function.
#[kernel]
pub fn saxpy_params(p: Affine, x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        out[i] = apply(p, x[i]);
    }
}

/// Math functions on the device: `out[i]` from `x[i]` through a chain of them.
#[kernel]
pub fn math_chain(x: &[f64], out: &mut [f64]) {
    let i = grid(1);
    if i < x.len() {
        let v = x[i];
        out[i] = v.sin() * v.cos() + v.abs().sqrt() + v.exp().ln() + v.powi(3) - v.powf(2.0)
            + v.atan2(1.0)
            + v.hypot(2.0)
            + math::erf(v)
            + v.floor()
            + v.ceil()
            + v.tanh()
            + math::fma(v, 2.0, 1.0);
    }
}

/// A vectorized function whose parameters are named as the expansion's own variables would
/// be, were they not kept apart.
#[vectorize]
pub fn vector_names(n: f32, out: f32, k: f32, len: f32) -> f32 {
    n + 2.0 * out + 3.0 * k + 4.0 * len
}

/// The rest of Numba's `math` functions of `v`, as a kernel (or host code) calls them.
#[device]
pub fn more_math(v: f64) -> [f64; 12] {
    let (m, e) = math::frexp(v);
    let (f, w) = math::modf(v);
    [
        v.asinh(),
        (1.0 + v.abs()).acosh(),
        (v / 4.0).atanh(),
        math::gamma(v),
        math::lgamma(v),
        math::remainder(v, 0.75),
        math::fmod(v, 0.75),
        math::ldexp(v, 3),
        m,
        e as f64,
        f,
        w,
    ]
}

/// [`more_math`] on the device, `out[i, k]` the `k`th function of `x[i]`.
#[kernel]
pub fn math_more(x: &[f64], out: &mut Array2<f64>) {
    let i = grid(1);
    if i < x.len() {
        for (k, value) in more_math(x[i]).into_iter().enumerate() {
            out[[i, k]] = value;
        }
    }
}

/// The number of functions [`cuda_math`] gives.
pub const CUDA_MATH: usize = 20;

/// CUDA's math API functions of `v` that Rust's float methods lack (Numba's `cuda.libdevice`),
/// as a kernel (or host code) calls them.
#[device]
pub fn cuda_math<F: math::LibdeviceFloat + From<i16>>(v: F) -> [F; CUDA_MATH] {
    let (s, c) = math::sincos(v);
    let a = v.abs();
    // In [-1, 1] for the tests' arguments, which lie in [-9, 14].
    let y = v / F::from(16);
    [
        math::exp10(v),
        math::rsqrt(a),
        s,
        c,
        math::sinpi(v),
        math::cospi(v),
        math::normcdf(v),
        math::j0(v),
        math::j1(v),
        math::jn(3, v),
        math::y0(a),
        math::y1(a),
        math::yn(2, a),
        math::nextafter(v, F::ONE),
        math::fdim(v, F::ONE / (F::ONE + F::ONE)),
        math::scalbn(v, -3),
        F::from(math::ilogb(a).clamp(-1000, 1000) as i16),
        math::erfinv(y),
        math::erfcinv(y + F::ONE),
        math::normcdfinv((y + F::ONE) / (F::ONE + F::ONE)),
    ]
}

/// [`cuda_math`] on the device, `out[i, k]` the `k`th function of `x[i]`.
#[kernel(instances(f32, f64))]
pub fn cuda_math_all<F: math::LibdeviceFloat + From<i16>>(x: &[F], out: &mut Array2<F>) {
    let i = grid(1);
    if i < x.len() {
        for (k, value) in cuda_math(x[i]).into_iter().enumerate() {
            out[[i, k]] = value;
        }
    }
}

/// The number of functions [`fast_math`] gives.
pub const FAST_MATH: usize = 11;

/// CUDA's fast intrinsics of `a` (and of `p = |a| + 1/8` for the logarithms and the power),
/// as a kernel (or host code) calls them: `__fdividef(a, y)`, `__expf(a)`, `__exp10f(a)`,
/// `__logf(p)`, `__log2f(p)`, `__log10f(p)`, `__sinf(a)`, `__cosf(a)`, `__tanf(a)`,
/// `__powf(p, y)`, `__saturatef(a)`.
#[device]
pub fn fast_math(a: f32, y: f32) -> [f32; FAST_MATH] {
    use math::fast;
    let p = a.abs() + 0.125;
    [
        fast::div(a, y),
        fast::exp(a),
        fast::exp10(a),
        fast::log(p),
        fast::log2(p),
        fast::log10(p),
        fast::sin(a),
        fast::cos(a),
        fast::tan(a),
        fast::pow(p, y),
        fast::saturate(a),
    ]
}

/// [`fast_math`] of each `(x[i], y[i])`, a row each.
#[kernel]
pub fn fast_math_all(x: &[f32], y: &[f32], out: &mut Array2<f32>) {
    let i = grid(1);
    if i < x.len() {
        let f = fast_math(x[i], y[i]);
        for (k, v) in f.iter().enumerate() {
            out[[i, k]] = *v;
        }
    }
}

/// The number of values [`fast_ops_of`] gives.
pub const FAST_OPS: usize = 10;

/// What `fastmath` makes approximate on `f32`, of a positive `v`: a quotient, divided in place,
/// and each float method it rewrites (two as `math`'s functions). On the host (and the CPU backend), as written; in the
/// device build of `f32`, CUDA's fast intrinsics; of `f64`, as written.
#[device(fastmath)]
pub fn fast_ops_of<F: math::LibdeviceFloat + From<i16>>(v: F) -> [F; FAST_OPS] {
    let mut q = v / (v + F::ONE);
    q /= F::from(3);
    [
        q,
        v.sqrt(),
        v.exp(),
        v.ln(),
        v.log2(),
        math::log10(v),
        v.sin(),
        v.cos(),
        v.tan(),
        math::pow(v, q),
    ]
}

/// [`fast_ops_of`] of each `x[i]`, a row each.
#[kernel(instances(f32, f64))]
pub fn fast_ops_all<F: math::LibdeviceFloat + From<i16>>(x: &[F], out: &mut Array2<F>) {
    let i = grid(1);
    if i < x.len() {
        for (k, value) in fast_ops_of(x[i]).into_iter().enumerate() {
            out[[i, k]] = value;
        }
    }
}

/// `(x / 3 / (x + 1) + sqrt(x)) / 2` of each `x[i]`, approximate in the device build (Numba's
/// `@cuda.jit(fastmath=True)`): divisions of values and of references, in place and not.
#[kernel(fastmath)]
pub fn fast_quotients(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        let x_i = &x[i];
        let mut q = x_i / 3.0; // of a reference
        q /= &(x[i] + 1.0);
        out[i] = q + x[i].sqrt();
        out[i] /= 2.0;
    }
}

/// [`math_more`]'s functions of `f32`, summed.
#[kernel]
pub fn math_more_f32(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        let v = x[i];
        out[i] = math::gamma(v)
            + math::lgamma(v)
            + v.asinh()
            + math::remainder(v, 0.75)
            + math::ldexp(v, 2)
            + math::frexp(v).0
            + math::modf(v).1;
    }
}

/// A 3-D stencil-free copy with scaling, for 3-D views.
#[kernel]
pub fn scale3(x: &Array3<f32>, s: f32, out: &mut Array3<f32>) {
    let (k, j, i) = grid(3);
    let (a, b, c) = x.dim();
    if i < a && j < b && k < c {
        out[[i, j, k]] = s * x[[i, j, k]];
    }
}

/// A barrier reached only from a device function: needs `#[kernel(barriers)]`.
#[device]
pub fn wait_for_block() {
    sync_threads();
}

/// Rotates each block's values by one thread through shared memory, the barrier hidden in a
/// device function.
#[kernel(barriers)]
pub fn rotate_with_device_barrier(data: &mut [u32]) {
    let mut s = shared_array![u32; 64];
    let t = thread_idx().x as usize;
    let n = block_dim().x as usize;
    let i = grid(1);
    s[t] = if i < data.len() { data[i] } else { 0 };
    wait_for_block();
    if i < data.len() {
        data[i] = s[(t + 1) % n];
    }
}

/// Threads of the upper half leave before a barrier the others reach, which they pass: the
/// leavers count as arrived, in split mode too.
#[kernel]
pub fn early_exit_before_barrier(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    if t >= block_dim().x as usize / 2 {
        return;
    }
    sync_threads();
    if t < out.len() {
        out[t] = 1;
    }
}

/// A loop holding a barrier whose trip count differs between threads.
#[kernel]
pub fn nonuniform_barrier_loop(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    for k in 0..t % 3 {
        sync_threads();
        if t < out.len() {
            out[t] = k as u32;
        }
    }
}

/// A `while` loop holding a barrier whose condition reads only a per-thread local, and turns
/// false for thread 0 one iteration before thread 1.
#[kernel]
pub fn nonuniform_barrier_while(out: &mut [u32]) {
    let t = thread_idx().x as usize;
    let mut left = t % 2 + 1;
    while left > 0 {
        sync_threads();
        left -= 1;
    }
    if t < out.len() {
        out[t] = left as u32;
    }
}

/// Threads that exit after the last barrier are fine; locals live across barriers in loops.
#[kernel]
pub fn exit_after_last_barrier(data: &mut [u32]) {
    let mut s = shared_array![u32; 64];
    let t = thread_idx().x as usize;
    let mut acc = 0u32;
    let mut round = 0;
    while round < 4 {
        s[t] = t as u32 + round;
        sync_threads();
        acc += s[(t + 1) % 64];
        sync_threads();
        round += 1;
    }
    if t % 2 == 1 {
        return;
    }
    data[t] = acc;
}

/// A device function that reads the calling thread's coordinates itself.
#[device]
pub fn my_global_id() -> usize {
    grid(1)
}

/// `out[i] = i` with the index taken inside a device function.
#[kernel]
pub fn ids_via_device_fn(out: &mut [u32]) {
    let i = my_global_id();
    if i < out.len() {
        out[i] = i as u32;
    }
}

/// Sums each element with its right neighbour: the last thread reads past the end of `x`,
/// which has the shape of `out` (the CPU backend's shared-extent version must still see it).
#[kernel]
pub fn pair_sum(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < out.len() {
        out[i] = x[i] + x[i + 1];
    }
}

/// Reads one column past a 16×16 shared tile in the threads of its last column.
#[kernel]
pub fn tile_overrun(out: &mut Array2<f32>) {
    let mut tile = shared_array![f32; [16, 16]];
    let tx = thread_idx().x as usize;
    let ty = thread_idx().y as usize;
    tile[[ty, tx]] = (ty * 16 + tx) as f32;
    sync_threads();
    out[[ty, tx]] = tile[[ty, tx + 1]];
}

/// Locals computed before a barrier from a parameter the body changes, and from the
/// thread's coordinates, keep their values after it; of a local shadowed before it, the
/// shadowing one.
#[kernel]
pub fn locals_across_barrier(mut base: u32, out: &mut [u32]) {
    let mut tile = shared_array![u32; 64];
    let t = thread_idx().x as usize;
    let first = base + t as u32;
    base += 100;
    tile[t] = first;
    let t = 63 - t as u32;
    sync_threads();
    let i = grid(1);
    if i < out.len() {
        out[i] = tile[t as usize] + first + base;
    }
}

/// Block-uniform locals (`step`, `scale`, `round`) changed between statements of one region
/// that read them, and in loops that hold barriers, beside per-thread ones (`acc`), with
/// threads that leave early: for `out[i]`, see `uniform_steps_reference` in the kernel tests.
#[kernel]
pub fn uniform_steps(limit: u32, out: &mut [u32]) {
    let mut s = shared_array![u32; 64];
    let t = thread_idx().x as usize;
    let width = block_dim().x as usize;
    let mut step = 1u32;
    let mut acc = t as u32 + block_idx().x;
    s[t] = acc;
    sync_threads();
    for round in 0..4u32 {
        let scale = step + round;
        acc = acc
            .wrapping_mul(3)
            .wrapping_add(s[(t + step as usize) % width].wrapping_mul(scale));
        step = step * 2 + round;
        acc ^= step;
        sync_threads();
        s[t] = acc;
        sync_threads();
    }
    while step < limit {
        step += step / 2 + 1;
        sync_threads();
    }
    if t % 3 == 2 {
        return;
    }
    out[block_idx().x as usize * width + t] = acc.wrapping_add(step);
}

/// Every thread leaves where `skip` is not 0, before a read of `table` that every thread
/// would make alike (a block-uniform local), past its end unless `skip` and `past` are 0.
#[kernel]
pub fn uniform_after_return(skip: u32, past: u32, table: &[u32], out: &mut [u32]) {
    let t = thread_idx().x as usize;
    out[t] = 1;
    sync_threads();
    if skip != 0 {
        return;
    }
    let last = table[table.len() - 1 + (skip + past) as usize];
    out[t] = last + 1;
}

/// Writes each thread's `grid(1)` and `gridsize(1)` below `n`: only grid-level indices tell its
/// threads apart, so the CPU backend runs runs of its blocks as one loop; `n` past the end of
/// `out` makes the threads beyond it fault.
#[kernel]
pub fn global_ids(n: usize, ids: &mut [u64]) {
    let i = grid(1);
    if i < n {
        ids[i] = (i * gridsize(1)) as u64;
    }
}

/// Writes `1 + z` at each `[z, y, x]` of `out` where its guard holds: tests on `x` in each form
/// whose span the CPU backend's rows compute (`lo <= x`, `x + pad < nx`, `nx > x`, `x <= last`,
/// `x + 1 >= lo`, `1 + x > lo`), tests on `y` and `z` alone, and a last test that reads memory,
/// which the threads decide for themselves.
#[kernel(boundscheck = false)]
pub fn guarded_marks(lo: usize, pad: usize, out: &mut Array3<u32>) {
    let (x, y, z) = grid(3);
    let (nz, ny, nx) = out.dim();
    let last = nx.max(1) - 1;
    if z < nz
        && y < ny
        && lo <= x
        && x + pad < nx
        && nx > x
        && (x <= last && x + 1 >= lo)
        && 1 + x > lo
        && out[[z, y, x]] == 0
    {
        out[[z, y, x]] = 1 + z as u32;
    }
}

/// `out[[i, j]]` = the sum of `x[[i, j - 1]]`, `x[[i, j]]`, `x[[i, j + 1]]` for the interior of
/// each row, its guard on `j` spelled `1 <= j && j + 1 < m`, index checks on: the CPU backend
/// checks the indices once per row's span, whichever the spelling of the guard (the kernels
/// below). Written out each, not by a `macro_rules!` macro, whose kernels the build step cannot
/// see.
#[kernel]
pub fn row_sums_plus(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n && 1 <= j && j + 1 < m {
        out[[i, j]] = x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]];
    }
}

/// [`row_sums_plus`] guarded by `1 <= j && j < m - 1`, Numba's `1 <= j < m - 1` (for `m` at
/// least 1).
#[kernel]
pub fn row_sums_minus(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n && 1 <= j && j < m - 1 {
        out[[i, j]] = x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]];
    }
}

/// [`row_sums_plus`] guarded by `j >= 1 && m - 1 > j`, mirrored (for `m` at least 1).
#[kernel]
pub fn row_sums_mirrored(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n && j >= 1 && m - 1 > j {
        out[[i, j]] = x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]];
    }
}

/// [`row_sums_plus`] guarded by `0 < j && j <= m - 2` (for `m` at least 2).
#[kernel]
pub fn row_sums_le(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n && 0 < j && j <= m - 2 {
        out[[i, j]] = x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]];
    }
}

/// [`row_sums_plus`] with its guard split over nested `if`s.
#[kernel]
pub fn row_sums_nested(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n {
        if 1 <= j {
            if j + 1 < m {
                out[[i, j]] = x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]];
            }
        }
    }
}

/// [`row_sums_plus`] with its guard as early returns.
#[kernel]
pub fn row_sums_early(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i >= n || j == 0 {
        return;
    }
    if j + 1 >= m {
        return;
    }
    out[[i, j]] = x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]];
}

/// [`row_sums_plus`] reading one column too far right: the thread at `j = m - 2` of each row
/// faults.
#[kernel]
pub fn row_sums_overreach(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if i < n && 1 <= j && j + 1 < m {
        out[[i, j]] = x[[i, j - 1]] + x[[i, j + 2]];
    }
}

/// Writes 1 at each `[y, x]` of `out`, letting the threads of row 2 one past the end through:
/// the first of them faults.
#[kernel]
pub fn row_two_overruns(out: &mut Array2<u32>) {
    let (x, y) = grid(2);
    let (h, w) = out.dim();
    if y < h && x <= w && (y == 2 || x < w) {
        out[[y, x]] = 1;
    }
}

/// Writes `out[[i, k]]`, the `k`-th number thread `i` draws from its generator `states[i]`:
/// uniform where `normal` is false, else standard normal.
#[kernel]
pub fn random_draws_f32(states: &mut [Xoroshiro128pState], normal: bool, out: &mut Array2<f32>) {
    let i = grid(1);
    let (n, draws) = out.dim();
    if i < n && i < states.len() {
        for k in 0..draws {
            out[[i, k]] = if normal {
                xoroshiro128p_normal_f32(&mut states, i)
            } else {
                xoroshiro128p_uniform_f32(&mut states, i)
            };
        }
    }
}

/// [`random_draws_f32`] in `f64`.
#[kernel]
pub fn random_draws_f64(states: &mut [Xoroshiro128pState], normal: bool, out: &mut Array2<f64>) {
    let i = grid(1);
    let (n, draws) = out.dim();
    if i < n && i < states.len() {
        for k in 0..draws {
            out[[i, k]] = if normal {
                xoroshiro128p_normal_f64(&mut states, i)
            } else {
                xoroshiro128p_uniform_f64(&mut states, i)
            };
        }
    }
}

/// Writes `out[[i, k]]`, the `k`-th 64 random bits of `states[i]`.
#[kernel]
pub fn random_bits(states: &mut [Xoroshiro128pState], out: &mut Array2<u64>) {
    let i = grid(1);
    let (n, draws) = out.dim();
    if i < n && i < states.len() {
        for k in 0..draws {
            out[[i, k]] = xoroshiro128p_next(&mut states, i);
        }
    }
}

/// The sum of two `f64`s, as a reduction over arrays.
#[reduce]
pub fn sum_f64(a: f64, b: f64) -> f64 {
    a + b
}

/// The larger of two `i32`s, as a reduction over arrays.
#[reduce]
pub fn max_i32(a: i32, b: i32) -> i32 {
    a.max(b)
}

/// The smaller of two `f32`s, as a reduction over arrays.
#[reduce]
pub fn min_f32(a: f32, b: f32) -> f32 {
    a.min(b)
}

/// The wrapping sum of two `u64`s, as a reduction over arrays.
#[reduce]
pub fn sum_u64(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

/// The larger of two bytes: a value narrower than the word a warp moves.
#[reduce]
pub fn max_u8(a: u8, b: u8) -> u8 {
    a.max(b)
}

/// A value and where it was: what an argmax reduces.
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
#[repr(C)]
pub struct Best {
    /// The value.
    pub value: f32,
    /// Its index.
    pub index: u32,
}

/// The larger value, the first index of equal ones: an argmax as a reduction over a struct,
/// the same in whatever order its values meet.
#[reduce]
pub fn argmax(a: Best, b: Best) -> Best {
    if b.value > a.value || (b.value == a.value && b.index < a.index) {
        b
    } else {
        a
    }
}

/// Adds every element of `x` into the one value of `total`, atomically, and writes into `first`
/// what `x[0]` holds: 0-D arrays as a kernel's scalar results.
#[kernel]
pub fn total_into_scalar(x: &[u64], total: &mut Array0<u64>, first: &mut Array0<u64>) {
    let i = grid(1);
    if i < x.len() {
        atomic_add(&total, (), x[i]);
        if i == 0 {
            first[()] = x[0];
        }
    }
}

/// Rotates `a` left by one, `steps` times, in one cooperative launch: each step reads what
/// other blocks wrote in the phase before (through `b`), the grid barrier between.
#[kernel]
pub fn grid_rotate(steps: u32, a: &mut [u32], b: &mut [u32]) {
    let i = grid(1);
    let n = a.len();
    for _ in 0..steps {
        if i < n {
            b[i] = a[(i + 1) % n];
        }
        grid_sync();
        if i < n {
            a[i] = b[i];
        }
        grid_sync();
    }
}

/// The inclusive prefix sums of `x` into `out`, in three phases of one cooperative launch:
/// each block sums its part (a grid-stride share of whole blocks) into `parts` through shared
/// memory; thread 0 of block 0 scans `parts`; every block adds the sums of the blocks before.
#[kernel]
pub fn grid_prefix_sums(x: &[u64], parts: &mut [u64], out: &mut [u64]) {
    let t = thread_idx().x as usize;
    let b = block_idx().x as usize;
    let width = block_dim().x as usize;
    let blocks = grid_dim().x as usize;
    let n = x.len();
    // Block b owns the elements [b * chunk, (b + 1) * chunk).
    let chunk = n.div_ceil(blocks);
    let mut sums = shared_array![u64; 256];
    let mut own = 0u64;
    let mut k = b * chunk + t;
    while k < n.min((b + 1) * chunk) {
        own += x[k];
        k += width;
    }
    sums[t] = own;
    sync_threads();
    if t == 0 {
        let mut total = 0u64;
        for s in 0..width {
            total += sums[s];
        }
        parts[b] = total;
    }
    block_sums_scan(this_grid(), parts, t == 0 && b == 0);
    if t == 0 {
        let mut run = if b == 0 { 0 } else { parts[b - 1] };
        let end = n.min((b + 1) * chunk);
        let mut k = b * chunk;
        while k < end {
            run += x[k];
            out[k] = run;
            k += 1;
        }
    }
}

/// The grid barrier, one thread's inclusive scan of `parts` (where `scans`), the grid barrier:
/// a `#[device]` function that takes the grid from its kernel.
#[device]
pub fn block_sums_scan(grid: GridGroup, mut parts: View1Mut<u64>, scans: bool) {
    grid.sync();
    if scans {
        for k in 1..parts.len() {
            parts[k] += parts[k - 1];
        }
    }
    grid.sync();
}

/// Block 0 returns before the grid barrier that every other block waits at.
#[kernel]
pub fn grid_sync_skipped_by_block0(out: &mut [u32]) {
    let i = grid(1);
    if block_idx().x == 0 {
        return;
    }
    grid_sync();
    if i < out.len() {
        out[i] = 1;
    }
}

/// Two blocks write `out[0]` in the same phase (a race), then, after the grid barrier, every
/// thread reads it (no race: the barrier orders the writes before).
#[kernel]
pub fn grid_phase_race(out: &mut [u32], seen: &mut [u32]) {
    let i = grid(1);
    if thread_idx().x == 0 {
        out[0] = block_idx().x;
    }
    grid_sync();
    if i < seen.len() {
        seen[i] = out[0];
    }
}

/// Block `b`'s thread 0 writes `out[b]`; after the grid barrier, thread 0 of each block reads
/// its neighbour's, then writes its own again: ordered by the barrier, no race.
#[kernel]
pub fn grid_neighbours(out: &mut [u32], seen: &mut [u32]) {
    let b = block_idx().x as usize;
    let blocks = grid_dim().x as usize;
    if thread_idx().x == 0 && b < out.len() {
        out[b] = b as u32 + 1;
    }
    grid_sync();
    if thread_idx().x == 0 && b < seen.len() {
        seen[b] = out[(b + 1) % blocks];
    }
    grid_sync();
    if thread_idx().x == 0 && b < out.len() {
        out[b] = 0;
    }
}

/// Writes, at each thread's rank in the grid, the grid's threads minus that rank.
#[kernel]
pub fn grid_ranks(out: &mut [u32]) {
    let g = this_grid();
    let r = g.thread_rank() as usize;
    if r < out.len() {
        out[r] = (g.size() - r as u64) as u32;
    }
    g.sync();
}

/// `y[i] = a x[i] + y[i]`, one PTX entry per listed type, each in blocks of at most 128 threads.
#[kernel(instances(f32, f64, i32, u64, f16), launch_bounds = 128)]
pub fn axpy_generic<T: DeviceNumber>(a: T, x: &[T], y: &mut [T]) {
    let i = grid(1);
    if i < x.len() && i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// Adds each `x[i]`, widened, to `out[i]`: two type parameters, listed as pairs.
#[kernel(instances((f32, f64), (i32, i64)))]
pub fn widen_add<T, U>(x: &[T], out: &mut [U])
where
    T: DeviceNumber + Into<U>,
    U: DeviceNumber,
{
    let i = grid(1);
    if i < x.len() && i < out.len() {
        out[i] += widen(x[i]);
    }
}

/// `x` converted to `U`: a generic `#[device]` function.
#[device]
pub fn widen<T: Into<U>, U>(x: T) -> U {
    x.into()
}

/// Counts, per block, the elements of `x` above `threshold` through a shared tree reduction
/// split at its barriers: a generic kernel whose shared array has a concrete type.
#[kernel(instances(u8, f64))]
pub fn count_above<T: DeviceNumber>(threshold: T, x: &[T], counts: &mut [u32]) {
    let t = thread_idx().x as usize;
    let i = grid(1);
    let mut hits = shared_array![u32; 128];
    hits[t] = (i < x.len() && x[i] > threshold) as u32;
    sync_threads();
    let mut stride = 64;
    while stride > 0 {
        if t < stride {
            hits[t] += hits[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        counts[block_idx().x as usize] = hits[0];
    }
}

/// `y[i] = a x[i] + y[i]` for `i < n`, through raw pointers: an `unsafe` kernel.
#[kernel]
pub unsafe fn axpy_raw(n: usize, a: f32, x: *const f32, y: *mut f32) {
    let i = grid(1);
    if i < n {
        // SAFETY: the launch's contract: `x` and `y` address `n` elements each.
        unsafe { *y.add(i) += a * *x.add(i) };
    }
}

/// Threads past `live` of each block return before the grid barrier the others wait at: they
/// count as arrived.
#[kernel]
pub fn grid_sync_skipped_by_threads(live: u32, out: &mut [u32]) {
    let i = grid(1);
    if thread_idx().x >= live {
        return;
    }
    grid_sync();
    if i < out.len() {
        out[i] = 1;
    }
}

/// Sums `x` into `out[0]` in two phases: each thread adds its element into its block's slot of
/// `parts`; after the grid barrier, thread 0 of block 0 adds the slots. The threads run as
/// coroutines (a barrier inside a branch), one block of one thread included.
#[kernel]
pub fn grid_sum_in_branch(x: &[u32], parts: &mut [u32], out: &mut [u32]) {
    let i = grid(1);
    let b = block_idx().x as usize;
    if i < x.len() {
        atomic_add(&parts, b, x[i]);
    }
    if !parts.is_empty() {
        grid_sync();
    }
    if i == 0 {
        let mut total = 0;
        for k in 0..parts.len() {
            total += parts[k];
        }
        out[0] = total;
    }
}

/// `grid_rotate` for two element types: a generic cooperative kernel.
#[kernel(instances(u32, f64))]
pub fn grid_rotate_generic<T: DeviceNumber>(steps: u32, a: &mut [T], b: &mut [T]) {
    let i = grid(1);
    let n = a.len();
    for _ in 0..steps {
        if i < n {
            b[i] = a[(i + 1) % n];
        }
        grid_sync();
        if i < n {
            a[i] = b[i];
        }
        grid_sync();
    }
}

constant_array!(
    /// The taps of `convolve_taps`, in constant memory.
    pub static TAPS: [f32; 5]
);

global_array!(
    /// The table `gather_lookup` reads, in global memory.
    pub static LOOKUP: [u32; 1000]
);

constant_array!(
    /// Per block, a pair `scale_pairs` applies: a struct in constant memory.
    pub static BLOCK_PAIRS: [Pair; 4]
);

global_array!(
    /// Never set: kernels and host code read zeros.
    pub static NEVER_SET: [f64; 3]
);

constant_array!(
    /// Empty, as Numba allows: `convolve_empty` reads only its length.
    pub static NO_TAPS: [f32; 0]
);

/// `out[i] = x[i] + NO_TAPS.len()`: a kernel with an empty constant array.
#[kernel]
pub fn convolve_empty(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        out[i] = x[i] + NO_TAPS.read().len() as f32;
    }
}

/// `out[i] = Σ_k TAPS[k] · x[i + k]` where the taps fit, read through the constant cache.
#[kernel]
pub fn convolve_taps(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    let taps = TAPS.read();
    if i + taps.len() <= x.len() {
        let mut acc = 0.0;
        for k in 0..taps.len() {
            acc += taps.get(k) * x[i + k];
        }
        out[i] = acc;
    }
}

/// `out[i] = LOOKUP[keys[i]]` (through the read-only cache): a key past the table's end is a
/// fault naming it.
#[kernel]
pub fn gather_lookup(keys: &[u32], out: &mut [u32]) {
    let i = grid(1);
    if i < keys.len() {
        out[i] = LOOKUP.read().get(keys[i] as usize) + NEVER_SET.read()[2] as u32;
    }
}

/// `out[i] = pair.n · x[i] + pair.x` with the pair of the block, read through a shared copy
/// made before a barrier: the view lives across it.
#[kernel]
pub fn scale_pairs(x: &[f32], out: &mut [f32]) {
    let mut first = shared_array![f32; 1];
    let pairs = BLOCK_PAIRS.read();
    let b = block_idx().x as usize % pairs.len();
    if thread_idx().x == 0 {
        first[0] = pairs[b].x;
    }
    sync_threads();
    let i = grid(1);
    if i < x.len() {
        out[i] = pairs[b].n as f32 * x[i] + first[0];
    }
}

/// Fills a block's whole dynamic shared memory, sized at launch (past 48 KiB where the device
/// opts in), then sums it back from the other end into `sums[block]`.
#[kernel]
pub fn shared_window_sums(sums: &mut [u32]) {
    let mut tile = dynamic_shared![u32];
    let t = thread_idx().x as usize;
    let n = block_dim().x as usize;
    let b = block_idx().x as usize;
    let len = tile.len();
    let mut k = t;
    while k < len {
        tile[k] = (k % 7 + b) as u32;
        k += n;
    }
    sync_threads();
    let mut acc = 0u32;
    let mut k = t;
    while k < len {
        acc += tile[len - 1 - k];
        k += n;
    }
    atomic_add(&sums, b, acc);
}

/// Each thread prints two lines: its coordinates with an integer, a float, a 64-bit number,
/// hex, a negative number, a bool, a literal and a percent sign; then `done` with its index.
#[kernel]
pub fn print_lines(x: &[f32], flags: &[u32]) {
    let i = grid(1);
    if i < x.len() {
        let big = i as u64 * 1_000_000_007;
        kprintln!(
            "block {} thread {:<2}: x={:.2} big={big} hex={:#x} neg={} {} {}%",
            block_idx().x,
            thread_idx().x,
            x[i],
            (i as u32 + 1) * 255,
            -(i as i64),
            flags[i] != 0,
            "ok"
        );
        kprintln!("done {i:03}");
    }
}

/// Prints after a barrier a local computed before it, named in the format string (`{t}`).
#[kernel]
pub fn print_after_barrier(out: &mut [u32]) {
    let t = thread_idx().x;
    let mut s = shared_array![u32; 64];
    s[t as usize] = t * 10;
    sync_threads();
    let from = s[(t as usize + 1) % 64];
    kprintln!("thread {t} read {from}");
    out[t as usize] = from;
}

/// `y[i] = a x[i] + y[i]` in half precision: each operation rounds to `f16`, as the `half`
/// crate's arithmetic does on every backend.
#[kernel]
pub fn haxpy(a: f16, x: &[f16], y: &mut [f16]) {
    let i = grid(1);
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// Half-precision math per element, `out[8i..8i + 8]`: `sqrt |x|`, `|x|`, `x·x + 0.25` (one
/// rounding), `sin x`, `exp x`, `hrint`, `hrcp` and `hmax(x, 0)` of `x[i]`.
#[kernel]
pub fn half_math(x: &[f16], out: &mut [f16]) {
    let i = grid(1);
    if i < x.len() {
        let v = x[i];
        let quarter = f16::from_f32(0.25);
        out[8 * i] = v.abs().sqrt();
        out[8 * i + 1] = fp16::habs(v);
        out[8 * i + 2] = fp16::hfma(v, v, quarter);
        out[8 * i + 3] = v.sin();
        out[8 * i + 4] = fp16::hexp(v);
        out[8 * i + 5] = fp16::hrint(v);
        out[8 * i + 6] = fp16::hrcp(v);
        out[8 * i + 7] = fp16::hmax(v, f16::ZERO);
    }
}

/// `out[0] += Σ x[i] y[i]` over bf16 inputs, each product and sum in f32: per block through
/// shared memory, then one atomic add a block.
#[kernel]
pub fn bf16_dot(x: &[bf16], y: &[bf16], out: &mut [f32]) {
    let mut part = shared_array![f32; 256];
    let t = thread_idx().x as usize;
    let mut acc = 0.0f32;
    let mut i = grid(1);
    while i < x.len() {
        acc += x[i].to_f32() * y[i].to_f32();
        i += gridsize(1);
    }
    part[t] = acc;
    sync_threads();
    let mut stride = 128;
    while stride > 0 {
        if t < stride {
            part[t] += part[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        atomic_add(&out, 0, part[0]);
    }
}

/// `sums[i % sums.len()] += x[i]` with f16 atomics, and the same in bf16.
#[kernel]
pub fn half_atomic_sums(x: &[f16], sums: &mut [f16], xb: &[bf16], sums_b: &mut [bf16]) {
    let i = grid(1);
    if i < x.len() {
        atomic_add(&sums, i % sums.len(), x[i]);
        atomic_add(&sums_b, i % sums_b.len(), xb[i]);
    }
}

/// `f16`'s methods and operators as kernels use them, eight results per element of `x`
/// (`out[8i..8i + 8]`): on a GPU they are the device's own `f16`, whose every value must be the
/// host's `half::f16`'s.
#[kernel]
pub fn half_api(x: &[f16], out: &mut [f16]) {
    let i = grid(1);
    if i < x.len() {
        for (k, v) in half_api_of(x[i]).into_iter().enumerate() {
            out[8 * i + k] = v;
        }
    }
}

/// The eight results of [`half_api`] for `v`.
#[device]
pub fn half_api_of(v: f16) -> [f16; 8] {
    let limit = f16::from_f64(100.0);
    let sign = match v.is_nan() || v.is_infinite() || !v.is_finite() {
        true => f16::NAN,
        false => v.copysign(f16::NEG_ONE),
    };
    let mut acc = f16::from(3u8) - f16::from(-2i8);
    acc += f16::from_f32(v.to_f64() as f32 * 0.5);
    acc *= f16::from_f32_const(0.5);
    let ordered = v.total_cmp(&f16::ZERO).is_lt() && v < f16::ZERO && v.is_sign_negative();
    [
        v.max(f16::ONE).min(f16::MAX).clamp(f16::NEG_ONE, limit),
        sign,
        acc,
        v.signum() * f16::from_bits(v.to_bits()) / f16::from_f32_const(4.0),
        [v, f16::ONE, f16::EPSILON].iter().sum(),
        [v, f16::from_f32(2.0)].into_iter().product(),
        f16::from_le_bytes(v.to_le_bytes()) % f16::from_f32(0.75),
        match ordered && v != f16::ONE {
            true => -v,
            false => f16::from_f32(f32::from(v)) - f16::PI,
        },
    ]
}

/// `x[i] = x[i] * 3 + by`: a step whose order with its repeats shows in the result (graphs).
#[kernel]
pub fn times_three_plus(x: &mut [u32], by: u32) {
    let i = grid(1);
    if i < x.len() {
        x[i] = x[i].wrapping_mul(3).wrapping_add(by);
    }
}

/// A stencil of every kind of parameter, in an order that mixes them: an input read at relative
/// indices named as the generated code names the output, a value, an array indexed as usual,
/// another relative input. Its PTX entry takes them in that order, then the output and the
/// three axes.
#[stencil(standard_indexing = (weights), cval = -1.0)]
pub fn mixed_stencil(out: &Array2<f32>, g: f32, weights: &[f32], b: &Array2<f32>) -> f32 {
    g * out[[0, 1]] + weights[0] * b[[-1, 0]]
}

/// The layout given by bit `bit` of `flags`: column-major where it is set.
#[device]
fn layout_of(flags: u32, bit: u32) -> kernel_runtime::wmma::Layout {
    if flags & bit != 0 {
        kernel_runtime::wmma::Layout::ColMajor
    } else {
        kernel_runtime::wmma::Layout::RowMajor
    }
}

/// Each lane's fragments of 16 × 16 tiles of `a`, `b` and `c`: `out[[lane, i]]`,
/// `out[[lane, 8 + i]]` and `out[[lane, 16 + i]]` are the lane's element `i` of each.
#[kernel]
pub fn fragment_places(a: &Array2<f16>, b: &Array2<f16>, c: &Array2<f32>, out: &mut Array2<f32>) {
    use kernel_runtime::wmma::*;
    let lane = thread_idx().x as usize;
    let mut fa = MatrixA::<M16N16K16, f16>::new();
    let mut fb = MatrixB::<M16N16K16, f16>::new();
    let mut fc = Accumulator::<M16N16K16>::new();
    load_matrix_sync(&mut fa, &a, [0, 0], Layout::RowMajor);
    load_matrix_sync(&mut fb, &b, [0, 0], Layout::RowMajor);
    load_matrix_sync(&mut fc, &c, [0, 0], Layout::RowMajor);
    for i in 0..8 {
        out[[lane, i]] = fa.x[i].to_f32();
        out[[lane, 8 + i]] = fb.x[i].to_f32();
        out[[lane, 16 + i]] = fc.x[i];
    }
}

/// `d = a · b + c` for the 16 × 16 tiles at `[1, 2]` of `a`, `b`, `c` and `d`, of `f16` into
/// `f32`, on every warp of the launch (each the same). Bits 1, 2, 4 and 8 of `flags` make `a`,
/// `b`, `c` and `d` column-major.
#[kernel]
pub fn mma_f16(a: &Array2<f16>, b: &Array2<f16>, c: &Array2<f32>, d: &mut Array2<f32>, flags: u32) {
    use kernel_runtime::wmma::*;
    let mut fa = MatrixA::<M16N16K16, f16>::new();
    let mut fb = MatrixB::<M16N16K16, f16>::new();
    let mut fc = Accumulator::<M16N16K16>::new();
    load_matrix_sync(&mut fa, &a, [1, 2], layout_of(flags, 1));
    load_matrix_sync(&mut fb, &b, [1, 2], layout_of(flags, 2));
    load_matrix_sync(&mut fc, &c, [1, 2], layout_of(flags, 4));
    let mut fd = Accumulator::<M16N16K16>::new();
    mma_sync(&mut fd, &fa, &fb, &fc);
    if block_idx().x == 0 && thread_idx().x < 32 {
        store_matrix_sync(&mut d, [1, 2], &fd, layout_of(flags, 8));
    }
}

/// [`mma_f16`] for `bf16` and the 16 × 8 shape, at `[0, 0]`, row-major, the accumulator
/// added to itself: `c = a · b + c`.
#[kernel]
pub fn mma_bf16_n8(a: &Array2<bf16>, b: &Array2<bf16>, c: &mut Array2<f32>) {
    use kernel_runtime::wmma::*;
    let mut fa = MatrixA::<M16N8K16, bf16>::new();
    let mut fb = MatrixB::<M16N8K16, bf16>::new();
    let mut acc = Accumulator::<M16N8K16>::new();
    load_matrix_sync(&mut fa, &a, [0, 0], Layout::RowMajor);
    load_matrix_sync(&mut fb, &b, [0, 0], Layout::RowMajor);
    load_matrix_sync(&mut acc, &c, [0, 0], Layout::RowMajor);
    let before = acc;
    mma_sync(&mut acc, &fa, &fb, &before);
    store_matrix_sync(&mut c, [0, 0], &acc, Layout::RowMajor);
}

/// A warp whose last lane returns before the multiply: the others call `mma_sync` without it.
#[kernel]
pub fn mma_without_lane_31(a: &Array2<f16>, out: &mut Array2<f32>) {
    use kernel_runtime::wmma::*;
    if thread_idx().x == 31 {
        return;
    }
    let mut fa = MatrixA::<M16N8K16, f16>::new();
    let fb = MatrixB::<M16N8K16, f16>::new();
    let mut acc = Accumulator::<M16N8K16>::new();
    load_matrix_sync(&mut fa, &a, [0, 0], Layout::RowMajor);
    let zero = acc;
    mma_sync(&mut acc, &fa, &fb, &zero); // mma: lane 31 gone
    store_matrix_sync(&mut out, [0, 0], &acc, Layout::RowMajor);
}

/// `c = a · b + c` for the warp's tiles at `[0, 0]` of shape `S`, of `T`s loaded from `a` and
/// `b` (`b` as `b_layout` places it): tensor cores called from a device function.
#[device]
pub fn multiply_into<S, T, X, C>(a: &X, b: &X, c: &mut C, b_layout: kernel_runtime::wmma::Layout)
where
    S: kernel_runtime::wmma::Shape + kernel_runtime::wmma::Fits<T>,
    T: kernel_runtime::wmma::Operand,
    X: core::ops::Index<[usize; 2]> + ?Sized,
    X::Output: Copy + Into<T>,
    C: core::ops::IndexMut<[usize; 2], Output = T::Acc> + ?Sized,
{
    use kernel_runtime::wmma::*;
    let mut fa = MatrixA::<S, T>::new();
    let mut fb = MatrixB::<S, T>::new();
    let mut acc = Accumulator::<S, T::Acc>::new();
    load_matrix_sync(&mut fa, a, [0, 0], Layout::RowMajor);
    load_matrix_sync(&mut fb, b, [0, 0], b_layout);
    load_matrix_sync(&mut acc, c, [0, 0], Layout::RowMajor);
    let before = acc;
    mma_sync(&mut acc, &fa, &fb, &before);
    store_matrix_sync(c, [0, 0], &acc, Layout::RowMajor);
}

/// `c += a · b` for `tf32` (m16n8k8): `a` 16 × 8, `b` 8 × 8 (held transposed), `c` 16 × 8,
/// the `f32` inputs rounded to `tf32` as they load.
#[kernel(barriers)] // the warp meets in `multiply_into`, which the macro does not see
pub fn mma_tf32(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    use kernel_runtime::wmma::*;
    multiply_into::<M16N8K8, Tf32, _, _>(&a, &b, &mut c, Layout::ColMajor);
}

/// `c += a · b` for `i8` (m16n8k32) into `i32`: `a` 16 × 32, `b` 32 × 8, `c` 16 × 8.
#[kernel(barriers)]
pub fn mma_s8(a: &Array2<i8>, b: &Array2<i8>, c: &mut Array2<i32>) {
    use kernel_runtime::wmma::*;
    multiply_into::<M16N8K32, i8, _, _>(&a, &b, &mut c, Layout::RowMajor);
}

/// [`mma_s8`] for `u8`.
#[kernel(barriers)]
pub fn mma_u8(a: &Array2<u8>, b: &Array2<u8>, c: &mut Array2<i32>) {
    use kernel_runtime::wmma::*;
    multiply_into::<M16N8K32, u8, _, _>(&a, &b, &mut c, Layout::RowMajor);
}

/// The warp's halves call `mma_sync` at two places: on a GPU, undefined; on the CPU backend,
/// reported as lanes of one collective waiting at different places.
#[kernel]
pub fn mma_in_two_branches(a: &Array2<f16>, out: &mut Array2<f32>) {
    use kernel_runtime::wmma::*;
    let mut fa = MatrixA::<M16N8K16, f16>::new();
    let fb = MatrixB::<M16N8K16, f16>::new();
    let mut acc = Accumulator::<M16N8K16>::new();
    load_matrix_sync(&mut fa, &a, [0, 0], Layout::RowMajor);
    let zero = acc;
    if thread_idx().x < 16 {
        mma_sync(&mut acc, &fa, &fb, &zero); // mma: first half
    } else {
        mma_sync(&mut acc, &fa, &fb, &zero); // mma: second half
    }
    store_matrix_sync(&mut out, [0, 0], &acc, Layout::RowMajor);
}

/// Each warp's halves call `wgmma::mma_async` at two places: on a GPU, undefined; on the CPU
/// backend, an error at the call. Launched with other than whole warpgroups of 128 threads, an
/// error at the first warpgroup operation.
#[kernel(barriers)]
pub fn wgmma_in_two_branches(out: &mut Array2<f32>) {
    use kernel_runtime::wgmma::*;
    let (sa, sb) = (shared_array![f16; [2 * 64, 8]], shared_array![f16; [16, 8]]);
    let mut acc = WgAccumulator::<M64N8K16>::new();
    fence();
    if thread_idx().x % 32 < 16 {
        mma_async::<M64N8K16, f16, 64, 16>(&mut acc, &sa, 0, &sb, 0, false); // wgmma: first half
    } else {
        mma_async::<M64N8K16, f16, 64, 16>(&mut acc, &sa, 0, &sb, 0, false); // wgmma: second half
    }
    commit_group();
    wait_group::<0>();
    acc.for_each(thread_idx().x as usize, |at, x| out[at] = *x);
}

/// Warpgroup MMA of a tile of `A` that lies in global memory (`a`, 128 × 8), not in shared
/// memory: a fault at the call on every backend.
#[kernel(barriers)]
pub fn wgmma_from_global(a: &Array2<f16>, out: &mut Array2<f32>) {
    use kernel_runtime::wgmma::*;
    let sb = shared_array![f16; [16, 8]];
    let mut acc = WgAccumulator::<M64N8K16>::new();
    fence();
    mma_async::<M64N8K16, f16, 64, 16>(&mut acc, &a, 0, &sb, 0, false);
    commit_group();
    wait_group::<0>();
    acc.for_each(thread_idx().x as usize, |at, x| out[at] = *x);
}

/// A kernel with no array argument, which runs on the default device: it stops where `x` is
/// not 7.
#[kernel]
pub fn seven(x: u32) {
    assert!(x == 7, "x is {x}, not 7");
}

/// `out[i]` = `x[i]` rounded as Python's `round` does: halves to even.
#[kernel]
pub fn round_halves(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        out[i] = x[i].round_ties_even();
    }
}

/// Each block of 32 threads stages rows `8 b .. 8 b + 8` of `x` (`f16`, 40 columns) through a
/// shared tile in two groups of asynchronous copies of 8 halves, zeros past `x`'s edges, and
/// writes the tile to `out` (8 rows per block, 48 columns): the first group is waited for
/// while the second flies.
#[kernel]
pub fn staged_async(x: &Array2<f16>, out: &mut Array2<f16>) {
    use kernel_runtime::pipeline::*;
    let mut tile = shared_array![f16; [8, 48]];
    let t = thread_idx().x as usize;
    let (rows, cols) = x.dim();
    let row0 = 8 * block_idx().x as usize;
    // Chunk `q` of the tile: 8 rows of 6 chunks of 8 halves, 48 chunks for 32 threads.
    let chunk = |q: usize| (q / 6, 8 * (q % 6));
    let valid = |r: usize, c: usize| {
        if row0 + r < rows {
            cols.saturating_sub(c).min(8)
        } else {
            0
        }
    };
    let (r, c) = chunk(t);
    memcpy_async::<f16, 8>(&mut tile, [r, c], &x, [row0 + r, c], valid(r, c));
    pipeline_commit();
    if t < 16 {
        let (r, c) = chunk(32 + t);
        memcpy_async::<f16, 8>(&mut tile, [r, c], &x, [row0 + r, c], valid(r, c));
    }
    pipeline_commit();
    pipeline_wait_prior::<1>();
    pipeline_wait_prior::<0>();
    sync_threads();
    for q in [t, t + 32] {
        if q < 48 {
            let (r, c) = chunk(q);
            for e in 0..8 {
                out[[row0 + r, c + e]] = tile[[r, c + e]];
            }
        }
    }
}

/// Each block of 64 threads stages the 16 × 32 tile of `x` at its corner (`16 b.y`, `32 b.x`)
/// through a shared tile with one `memcpy_async_tile` (zeros past `x`'s edges) and writes the
/// tile to `out` at the same corner, all of it: `out` holds the grid's tiles.
#[kernel]
pub fn staged_tiles(x: &Array2<f32>, out: &mut Array2<f32>) {
    use kernel_runtime::pipeline::*;
    let mut tile = shared_array![f32; [2 * 16, 32]];
    let corner = [16 * block_idx().y as usize, 32 * block_idx().x as usize];
    // The second buffer, so that the tile lands past the start of the shared array.
    memcpy_async_tile::<f32, 4, 16, 32, 64>(&mut tile, [16, 0], &x, corner);
    pipeline_commit();
    pipeline_wait_prior::<0>();
    sync_threads();
    let t = thread_idx().x as usize;
    for q in (t..16 * 32).step_by(64) {
        let (r, c) = (q / 32, q % 32);
        out[[corner[0] + r, corner[1] + c]] = tile[[16 + r, c]];
    }
}

/// Tile copies that break a rule of `memcpy_async_tile`, in blocks of 64 threads: `how` 0, a
/// tile that passes the shared array's last row; 1, a tile at a column off a multiple of the
/// copy's bytes; 2, a global array as the destination; otherwise, a copy shared among 32 threads.
#[kernel]
pub fn misplaced_tile(x: &Array2<f32>, y: &mut Array2<f32>, how: u32) {
    use kernel_runtime::pipeline::*;
    let mut tile = shared_array![f32; [16, 36]];
    match how {
        0 => memcpy_async_tile::<f32, 4, 16, 32, 64>(&mut tile, [1, 0], &x, [0, 0]),
        1 => memcpy_async_tile::<f32, 4, 16, 32, 64>(&mut tile, [0, 2], &x, [0, 0]),
        2 => memcpy_async_tile::<f32, 4, 16, 32, 64>(&mut y, [0, 0], &x, [0, 0]),
        _ => memcpy_async_tile::<f32, 4, 8, 16, 32>(&mut tile, [0, 0], &x, [0, 0]),
    }
    pipeline_commit();
    pipeline_wait_prior::<0>();
}

/// Copies that break a rule of `memcpy_async`: `how` 0, a destination off a multiple of the
/// copy's bytes; 1, a global array as the destination; 2, a row too short for the copy; 3, the
/// first element of a shared array that starts 4 bytes past such a multiple (packed after
/// another of 100 bytes).
#[kernel]
pub fn misplaced_async(x: &Array2<f32>, y: &mut Array2<f32>, how: u32) {
    use kernel_runtime::pipeline::*;
    let mut tile = shared_array![f32; [2, 12]];
    let pad = shared_array![f32; 1];
    let mut late = shared_array![f32; [1, 4]];
    match how {
        0 => memcpy_async::<f32, 4>(&mut tile, [0, 2], &x, [0, 0], 4),
        1 => memcpy_async::<f32, 4>(&mut y, [0, 0], &x, [0, 0], 4),
        2 => memcpy_async::<f32, 4>(&mut tile, [1, 8], &x, [0, 6], 4), // x has 8 columns
        _ => memcpy_async::<f32, 4>(&mut late, [0, 0], &x, [0, 0], 4 + pad.len() - 1),
    }
    pipeline_commit();
    pipeline_wait_prior::<0>();
}

/// Which elements of a fragment `ldmatrix_sync` loads otherwise than `load_matrix_sync`, from
/// the tile at `tile` of `s` placed as `layout` says: a bit for each.
#[device]
pub fn ldmatrix_mismatches<F, X>(
    s: &X,
    tile: [usize; 2],
    layout: kernel_runtime::wmma::Layout,
) -> u32
where
    F: kernel_runtime::wmma::Matrix16 + Default,
    X: kernel_runtime::pipeline::Source<F::Stored>
        + core::ops::Index<[usize; 2], Output = F::Stored>,
{
    use kernel_runtime::wmma::{ldmatrix_sync, load_matrix_sync, Operand};
    let (mut each, mut warp) = (F::default(), F::default());
    load_matrix_sync(&mut each, s, tile, layout);
    ldmatrix_sync(&mut warp, s, tile, layout);
    let (each, warp) = (each.elems(), warp.elems());
    let mut bits = 0;
    for i in 0..each.len() {
        if each[i].bits() != warp[i].bits() {
            bits |= 1 << i;
        }
    }
    bits
}

/// `ldmatrix_sync` against `load_matrix_sync` from a shared copy of `a` (32 × 32), for `A` and
/// `B` of both shapes of `f16` in both layouts: `out[[case, lane]]` the mismatching elements.
#[kernel(barriers)] // the warp meets in `ldmatrix_mismatches`
pub fn ldmatrix_cases(a: &Array2<f16>, out: &mut Array2<u32>) {
    use kernel_runtime::wmma::{Layout::*, MatrixA, MatrixB, M16N16K16, M16N8K16};
    let mut s = shared_array![f16; [32, 40]];
    let lane = thread_idx().x as usize;
    for k in 0..32 {
        s[[lane, k]] = a[[lane, k]];
    }
    sync_threads();
    out[[0, lane]] = ldmatrix_mismatches::<MatrixA<M16N16K16, f16>, _>(&s, [8, 16], RowMajor);
    out[[1, lane]] = ldmatrix_mismatches::<MatrixA<M16N16K16, f16>, _>(&s, [16, 8], ColMajor);
    out[[2, lane]] = ldmatrix_mismatches::<MatrixB<M16N8K16, f16>, _>(&s, [8, 24], RowMajor);
    out[[3, lane]] = ldmatrix_mismatches::<MatrixB<M16N8K16, f16>, _>(&s, [16, 0], ColMajor);
    out[[4, lane]] = ldmatrix_mismatches::<MatrixB<M16N16K16, f16>, _>(&s, [16, 8], RowMajor);
    out[[5, lane]] = ldmatrix_mismatches::<MatrixB<M16N16K16, f16>, _>(&s, [8, 16], ColMajor);
}

/// `ldmatrix_sync` against `load_matrix_sync` for `A` of `tf32` from a shared copy of `a`
/// (32 × 32 `f32`, rounded as they load), in both layouts: `out[[case, lane]]` the mismatching
/// elements.
#[kernel(barriers)] // the warp meets in `ldmatrix_mismatches`
pub fn ldmatrix_tf32_cases(a: &Array2<f32>, out: &mut Array2<u32>) {
    use kernel_runtime::wmma::{Layout::*, MatrixA, Tf32, M16N8K8};
    let mut s = shared_array![f32; [32, 36]];
    let lane = thread_idx().x as usize;
    for k in 0..32 {
        s[[lane, k]] = a[[lane, k]];
    }
    sync_threads();
    out[[0, lane]] = ldmatrix_mismatches::<MatrixA<M16N8K8, Tf32>, _>(&s, [8, 4], RowMajor);
    out[[1, lane]] = ldmatrix_mismatches::<MatrixA<M16N8K8, Tf32>, _>(&s, [16, 24], RowMajor);
    out[[2, lane]] = ldmatrix_mismatches::<MatrixA<M16N8K8, Tf32>, _>(&s, [4, 8], ColMajor);
}

/// `ldmatrix_sync` misused: `how` 0, a tile at a column off a multiple of 8; 1, from a global
/// array; 2, without lane 31.
#[kernel]
pub fn ldmatrix_misused(a: &Array2<f16>, how: u32) {
    use kernel_runtime::wmma::{ldmatrix_sync, Layout, MatrixA, M16N8K16};
    let s = shared_array![f16; [16, 24]];
    let mut f = MatrixA::<M16N8K16, f16>::new();
    if how == 2 && thread_idx().x == 31 {
        return;
    }
    match how {
        0 => ldmatrix_sync(&mut f, &s, [0, 4], Layout::RowMajor),
        1 => ldmatrix_sync(&mut f, &a, [0, 0], Layout::RowMajor),
        _ => ldmatrix_sync(&mut f, &s, [0, 0], Layout::RowMajor),
    }
}
