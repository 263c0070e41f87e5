//! quicksort: a parallel quicksort of `u32` keys on the device.
//!
//! Each pass partitions every large segment at once, in parallel: blocks take chunks of a
//! segment, count the keys below, equal to and above the segment's pivot (median of three)
//! ([`qs_count`]), the host turns the counts into each block's output offsets, blocks scatter
//! their keys there ([`qs_scatter`]) and copy them back ([`qs_copy_back`]). Keys equal to the
//! pivot are final; the two other parts become the next pass's segments. Segments of at most
//! [`SMALL`] keys are finished in-block by a bitonic sort in shared memory ([`qs_sort_small`]).

use kernel_runtime::prelude::*;

/// Segments of at most this many keys are sorted in one block, in shared memory.
pub const SMALL: usize = 1024;
/// Threads per block of every quicksort kernel.
pub const QS_THREADS: usize = 256;
/// Keys each partitioning block takes from its segment.
pub const CHUNK: usize = QS_THREADS * 16;

#[device]
fn median3(a: u32, b: u32, c: u32) -> u32 {
    a.max(b).min(a.min(b).max(c))
}

#[device]
fn segment_pivot(keys: &View1<u32>, start: usize, len: usize) -> u32 {
    median3(keys[start], keys[start + len / 2], keys[start + len - 1])
}

/// Per block `b` (a chunk of a segment): `counts[3b..3b+3]` = keys below, equal to, above the
/// segment's pivot.
#[kernel]
pub fn qs_count(
    keys: &[u32],
    seg_start: &[u32],
    seg_len: &[u32],
    chunk: &[u32],
    counts: &mut [u32],
) {
    let mut local = shared_array![u32; 3];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    if t < 3 {
        local[t] = 0;
    }
    sync_threads();
    let (start, len) = (seg_start[b] as usize, seg_len[b] as usize);
    let pivot = segment_pivot(&keys, start, len);
    let from = chunk[b] as usize;
    let to = (from + CHUNK).min(len);
    let (mut lt, mut eq, mut gt) = (0u32, 0u32, 0u32);
    let mut k = from + t;
    while k < to {
        let v = keys[start + k];
        if v < pivot {
            lt += 1;
        } else if v == pivot {
            eq += 1;
        } else {
            gt += 1;
        }
        k += QS_THREADS;
    }
    atomic_add(&local, 0, lt);
    atomic_add(&local, 1, eq);
    atomic_add(&local, 2, gt);
    sync_threads();
    if t < 3 {
        counts[3 * b + t] = local[t];
    }
}

/// Per block `b`: writes its chunk's keys to `out` at `offsets[3b..3b+3]` (absolute positions of
/// its below / equal / above keys).
#[kernel]
pub fn qs_scatter(
    keys: &[u32],
    seg_start: &[u32],
    seg_len: &[u32],
    chunk: &[u32],
    offsets: &[u32],
    out: &mut [u32],
) {
    let mut cursor = shared_array![u32; 3];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    if t < 3 {
        cursor[t] = offsets[3 * b + t];
    }
    sync_threads();
    let (start, len) = (seg_start[b] as usize, seg_len[b] as usize);
    let pivot = segment_pivot(&keys, start, len);
    let from = chunk[b] as usize;
    let to = (from + CHUNK).min(len);
    let mut k = from + t;
    while k < to {
        let v = keys[start + k];
        let side = if v < pivot {
            0
        } else if v == pivot {
            1
        } else {
            2
        };
        let p = atomic_add(&cursor, side, 1);
        out[p as usize] = v;
        k += QS_THREADS;
    }
}

/// Per block `b`: copies its chunk of the segment from `from` back to `to`.
#[kernel]
pub fn qs_copy_back(
    from: &[u32],
    seg_start: &[u32],
    seg_len: &[u32],
    chunk: &[u32],
    to: &mut [u32],
) {
    let b = block_idx().x as usize;
    let (start, len) = (seg_start[b] as usize, seg_len[b] as usize);
    let lo = chunk[b] as usize;
    let hi = (lo + CHUNK).min(len);
    let mut k = lo + thread_idx().x as usize;
    while k < hi {
        to[start + k] = from[start + k];
        k += QS_THREADS;
    }
}

/// Per block `b`: sorts `keys[seg_start[b]..][..seg_len[b]]` (at most [`SMALL`] keys) by a
/// bitonic sort in shared memory, over the segment's length rounded up to a power of two.
/// Launch [`QS_THREADS`] threads per block.
#[kernel]
pub fn qs_sort_small(keys: &mut [u32], seg_start: &[u32], seg_len: &[u32]) {
    let mut s = shared_array![u32; SMALL];
    let b = block_idx().x as usize;
    let t = thread_idx().x as usize;
    let (start, len) = (seg_start[b] as usize, seg_len[b] as usize);
    // The network sorts the segment padded to a power of two (the same for the whole block).
    let n = len.clamp(2, SMALL).next_power_of_two();
    let mut k = t;
    while k < n {
        s[k] = if k < len { keys[start + k] } else { u32::MAX };
        k += QS_THREADS;
    }
    sync_threads();
    let mut size = 2;
    while size <= n {
        let mut stride = size / 2;
        while stride > 0 {
            let mut idx = t;
            while idx < n / 2 {
                // The `idx`-th pair: blocks of `stride` pairs, each `2 * stride` keys apart.
                let pos = ((idx & !(stride - 1)) << 1) | (idx & (stride - 1));
                let partner = pos + stride;
                let ascending = pos & size == 0;
                let (x, y) = (s[pos], s[partner]);
                if (x > y) == ascending {
                    s[pos] = y;
                    s[partner] = x;
                }
                idx += QS_THREADS;
            }
            sync_threads();
            stride /= 2;
        }
        size *= 2;
    }
    let mut k = t;
    while k < len {
        keys[start + k] = s[k];
        k += QS_THREADS;
    }
}

/// Sorts `keys` in place on its device with the kernels above; returns the number of
/// partitioning passes.
#[cfg(not(target_arch = "nvptx64"))]
pub fn sort(keys: &mut kernel_runtime::DeviceArray1<u32>) -> Result<usize, kernel_runtime::Error> {
    let n = keys.len();
    if n > u32::MAX as usize {
        return Err(kernel_runtime::Error::TooLarge { shape: vec![n] });
    }
    let dev = keys.device().clone();
    let mut scratch = dev.zeros::<u32, _>(n)?;
    let mut large: Vec<(u32, u32)> = Vec::new();
    let mut small: Vec<(u32, u32)> = Vec::new();
    let mut push = |start: usize, len: usize, large: &mut Vec<(u32, u32)>| {
        if len > SMALL {
            large.push((start as u32, len as u32));
        } else if len > 1 {
            small.push((start as u32, len as u32));
        }
    };
    push(0, n, &mut large);
    let mut passes = 0;
    while !large.is_empty() {
        passes += 1;
        // One block per chunk of every large segment.
        let (mut bs, mut bl, mut bc) = (Vec::new(), Vec::new(), Vec::new());
        for &(s, l) in &large {
            for c in (0..l as usize).step_by(CHUNK) {
                bs.push(s);
                bl.push(l);
                bc.push(c as u32);
            }
        }
        let blocks = bs.len();
        let (ds, dl, dc) = (
            dev.to_device(&bs)?,
            dev.to_device(&bl)?,
            dev.to_device(&bc)?,
        );
        let mut counts = dev.zeros::<u32, _>(3 * blocks)?;
        qs_count.launch(blocks, QS_THREADS, (&*keys, &ds, &dl, &dc, &mut counts))?;
        let counts = counts.to_vec()?;
        // Offsets: within a segment, below-keys of all its blocks first, then equal, then above.
        let mut offsets = vec![0u32; 3 * blocks];
        let mut next_large = Vec::new();
        let mut b = 0;
        for &(s, l) in &large {
            let nb = (l as usize).div_ceil(CHUNK);
            let total = |side: usize| -> u32 { (b..b + nb).map(|i| counts[3 * i + side]).sum() };
            let (lt, eq) = (total(0), total(1));
            let mut cur = [s, s + lt, s + lt + eq];
            for i in b..b + nb {
                for side in 0..3 {
                    offsets[3 * i + side] = cur[side];
                    cur[side] += counts[3 * i + side];
                }
            }
            push(s as usize, lt as usize, &mut next_large);
            push(
                (s + lt + eq) as usize,
                (l - lt - eq) as usize,
                &mut next_large,
            );
            b += nb;
        }
        let doff = dev.to_device(&offsets)?;
        qs_scatter.launch(
            blocks,
            QS_THREADS,
            (&*keys, &ds, &dl, &dc, &doff, &mut scratch),
        )?;
        qs_copy_back.launch(blocks, QS_THREADS, (&scratch, &ds, &dl, &dc, &mut *keys))?;
        large = next_large;
    }
    if !small.is_empty() {
        let (ss, sl): (Vec<u32>, Vec<u32>) = small.into_iter().unzip();
        let (ds, dl) = (dev.to_device(&ss)?, dev.to_device(&sl)?);
        qs_sort_small.launch(ss.len(), QS_THREADS, (&mut *keys, &ds, &dl))?;
    }
    Ok(passes)
}
