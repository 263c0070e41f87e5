//! Kernels of the test suite that use the warp primitives: shuffles of each kind and width,
//! votes, matches, a warp-then-block scan, and warps that do not meet.

use kernel_runtime::prelude::*;

/// Every lane of the launch's warps, for the masks below.
pub const FULL: u32 = u32::MAX;

/// Each warp's sum of `x` (zeros past its end) by a butterfly of `shfl_xor_sync`, written by
/// every lane; `wide` gets the same sums in `f64` by `shfl_down_sync`, written by lane 0.
#[kernel]
pub fn warp_sums(x: &[f32], sums: &mut [f32], wide: &mut [f64]) {
    let i = grid(1);
    let v = if i < x.len() { x[i] } else { 0.0 };
    let (mut s, mut w) = (v, v as f64);
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        s += shfl_xor_sync(FULL, s, offset);
        w += shfl_down_sync(FULL, w, offset);
        offset /= 2;
    }
    if i < sums.len() {
        sums[i] = s;
    }
    if lane_id() == 0 && i / 32 < wide.len() {
        wide[i / 32] = w;
    }
}

/// For each thread of a 2-D block (warps span rows), its lane and what each kind of shuffle
/// brings it: `out[t] = [lane, idx, up, down, xor, wide_idx_hi, wide_idx_lo]`, where the
/// shuffled value of lane `l` is `1000 * warp + l` (the wide one `l << 32 | warp`).
#[kernel]
pub fn shuffle_kinds(src: u32, delta: u32, out: &mut Array2<u32>) {
    let (t, d) = (thread_idx(), block_dim());
    let linear = (t.y * d.x + t.x) as usize;
    let lane = lane_id();
    let warp = linear as u32 / WARP_SIZE;
    let mine = 1000 * warp + lane;
    let wide = (lane as u64) << 32 | warp as u64;
    let row = [
        lane,
        shfl_sync(FULL, mine, src),
        shfl_up_sync(FULL, mine, delta),
        shfl_down_sync(FULL, mine as i32, delta) as u32,
        shfl_xor_sync(FULL, mine, delta),
        (shfl_sync(FULL, wide, src) >> 32) as u32,
        shfl_sync(FULL, wide as i64, src) as u32,
    ];
    if linear < out.dim().0 {
        for (k, v) in row.iter().enumerate() {
            out[[linear, k]] = *v;
        }
    }
}

/// Votes and matches of each warp on `x[i]`: `out[i] = [ballot(x > 0), all(x > 0), any(x > 0),
/// eq(x > 0), match_any(x), match_all(x).0, match_all(x).1, ballot of the lanes below]`.
#[kernel]
pub fn warp_votes(x: &[i32], out: &mut Array2<u32>) {
    let i = grid(1);
    let v = if i < x.len() { x[i] } else { 0 };
    let pos = v > 0;
    let (all_mask, all_same) = match_all_sync(FULL, v);
    let row = [
        ballot_sync(FULL, pos),
        all_sync(FULL, pos) as u32,
        any_sync(FULL, pos) as u32,
        eq_sync(FULL, pos) as u32,
        match_any_sync(FULL, v as f32),
        all_mask,
        all_same as u32,
        ballot_sync(FULL, pos) & lanemask_lt(),
    ];
    if i < out.dim().0 {
        for (k, r) in row.iter().enumerate() {
            out[[i, k]] = *r;
        }
    }
}

/// The inclusive prefix sum of `v` over the lanes of the warp, by `shfl_up_sync`.
#[device]
pub fn warp_scan(v: u32) -> u32 {
    let mut v = v;
    let mut offset = 1;
    while offset < WARP_SIZE {
        let below = shfl_up_sync(FULL, v, offset);
        if lane_id() >= offset {
            v += below;
        }
        offset *= 2;
    }
    v
}

/// An inclusive prefix sum of `data` within each block: each warp scans its lanes
/// ([`warp_scan`]), the warps' totals meet in shared memory behind a barrier, and the first
/// warp scans them. The scans are in a `#[device]` function, hence `barriers`.
#[kernel(barriers)]
pub fn block_scan(data: &mut [u32]) {
    let mut totals = shared_array![u32; 32];
    let i = grid(1);
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let mut v = warp_scan(if i < data.len() { data[i] } else { 0 });
    if lane == WARP_SIZE - 1 {
        totals[warp as usize] = v;
    }
    sync_threads();
    if warp == 0 {
        let warps = block_dim().x.div_ceil(WARP_SIZE);
        totals[lane as usize] = warp_scan(if lane < warps {
            totals[lane as usize]
        } else {
            0
        });
    }
    sync_threads();
    if warp > 0 {
        v += totals[warp as usize - 1];
    }
    if i < data.len() {
        data[i] = v;
    }
}

/// `activemask()` in the two branches of an `if` and after it: `out[3i]` in the branch lanes
/// divisible by 3 take, `out[3i + 1]` in the other, `out[3i + 2]` after both (the branch a lane
/// did not take leaves its slot 0).
#[kernel]
pub fn branch_activemask(out: &mut [u32]) {
    let i = grid(1);
    if 3 * i + 2 < out.len() {
        if lane_id() % 3 == 0 {
            out[3 * i] = activemask();
        } else {
            out[3 * i + 1] = activemask();
        }
        out[3 * i + 2] = activemask();
    }
}

/// Lanes at or past `stay` return at once; the others write `activemask()`, their ballot, and
/// the sum of their lanes in their half of the warp (`0..16`, `16..stay`), each with a mask of
/// the lanes that take part. `stay` is 16, 24 or 32, so each half's lanes pair up by `xor`.
#[kernel]
pub fn partial_warps(stay: u32, active: &mut [u32], votes: &mut [u32], halves: &mut [u32]) {
    let i = grid(1);
    let lane = lane_id();
    if lane >= stay {
        return;
    }
    let seen = activemask();
    let m = if stay >= 32 { FULL } else { (1 << stay) - 1 };
    let half = if lane < 16 { 0x0000_ffff } else { 0xffff_0000 } & m;
    let mut s = lane;
    let mut offset = half.count_ones() / 2;
    while offset > 0 {
        s += shfl_xor_sync(half, s, offset);
        offset /= 2;
    }
    syncwarp(m);
    let vote = ballot_sync(m, true);
    if i < active.len() {
        active[i] = seen;
        votes[i] = vote;
        halves[i] = s;
    }
}

/// Collectives with a full mask, whose results are defined in a partial warp too: per thread,
/// `out[4i..4i + 4]` = the ballot of lanes divisible by 3, whether any lane is above 20, the
/// lanes with the same `lane % 4`, and lane 0's `10 * lane` (0), after a `syncwarp`.
#[kernel]
pub fn full_mask_votes(out: &mut [u32]) {
    let i = grid(1);
    let lane = lane_id();
    syncwarp(FULL);
    let votes = ballot_sync(FULL, lane % 3 == 0);
    let any = any_sync(FULL, lane > 20);
    let same = match_any_sync(FULL, lane % 4);
    let first = shfl_sync(FULL, 10 * lane + 1, 0);
    if 4 * i + 3 < out.len() {
        out[4 * i] = votes;
        out[4 * i + 1] = any as u32;
        out[4 * i + 2] = same;
        out[4 * i + 3] = first;
    }
}

/// A full-warp shuffle that only the lanes below `reach` call: the others return.
#[kernel]
pub fn shuffle_from_half(reach: u32, out: &mut [u32]) {
    let i = grid(1);
    if lane_id() < reach {
        let v = shfl_down_sync(FULL, i as u32, 1);
        if i < out.len() {
            out[i] = v;
        }
    }
}

/// Lanes below 16 shuffle with a full mask in a branch, then every lane shuffles again: lanes
/// 16.. are elsewhere (at the second shuffle) when the first one waits for them, which would
/// hang a GPU.
#[kernel]
pub fn branch_then_all(out: &mut [u32]) {
    let i = grid(1);
    let mut v = i as u32;
    if lane_id() < 16 {
        v = shfl_down_sync(FULL, v, 1);
    }
    v = shfl_xor_sync(FULL, v, 1);
    if i < out.len() {
        out[i] = v;
    }
}

/// Lanes below 16 vote while the others wait at a barrier.
#[kernel]
pub fn vote_beside_barrier(out: &mut [u32]) {
    let i = grid(1);
    if lane_id() < 16 {
        out[i] = ballot_sync(FULL, true);
    } else {
        sync_threads();
    }
}

/// A vote whose mask leaves out the calling lane.
#[kernel]
pub fn vote_without_self(out: &mut [u32]) {
    let i = grid(1);
    out[i] = ballot_sync(1 << ((lane_id() + 1) % 32), true);
}

/// A warp's sum in a `#[device]` function: the kernel calling it needs `#[kernel(barriers)]`.
#[device]
pub fn warp_total(v: u32) -> u32 {
    let mut s = v;
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        s += shfl_xor_sync(FULL, s, offset);
        offset /= 2;
    }
    s
}

/// Each thread's warp total, through [`warp_total`].
#[kernel(barriers)]
pub fn warp_totals(out: &mut [u32]) {
    let i = grid(1);
    let s = warp_total(i as u32);
    if i < out.len() {
        out[i] = s;
    }
}

/// The same, without `#[kernel(barriers)]`: the CPU backend cannot run it with blocks of more
/// than one thread and says so.
#[kernel]
pub fn warp_totals_unmarked(out: &mut [u32]) {
    let i = grid(1);
    let s = warp_total(i as u32);
    if i < out.len() {
        out[i] = s;
    }
}

/// Each lane passes its value to the lane beside it through shared memory, then lane 0 of each
/// warp passes its own to the whole warp, a `syncwarp` between each write and the reads of
/// other lanes, and between those reads and the next write: `out[i] = [the neighbour's value,
/// lane 0's]` (values past the end of `x` are 0). Blocks of up to 256 threads, whole warps.
#[kernel]
pub fn exchange_through_shared(x: &[u32], out: &mut Array2<u32>) {
    let mut s = shared_array![u32; 256];
    let t = thread_idx().x as usize;
    let i = grid(1);
    let first = t - lane_id() as usize;
    s[t] = if i < x.len() { x[i] } else { 0 };
    syncwarp(FULL);
    let neighbour = s[t ^ 1];
    syncwarp(FULL);
    if t == first {
        s[t] += 1;
    }
    syncwarp(FULL);
    let broadcast = s[first] - 1;
    syncwarp(FULL);
    if t == first {
        s[t] = 0;
    }
    if i < out.dim().0 {
        out[[i, 0]] = neighbour;
        out[[i, 1]] = broadcast;
    }
}

/// The same exchange with a shuffle where the `syncwarp` belongs: a shuffle orders no memory
/// access, so lane 0 reading the element lane 1 wrote races with that write.
#[kernel]
pub fn exchange_after_shuffle(out: &mut [u32]) {
    let mut s = shared_array![u32; 64];
    let t = thread_idx().x as usize;
    s[t] = t as u32;
    let v = shfl_xor_sync(FULL, t as u32, 1);
    out[t] = s[t ^ 1] + v;
}

/// Each half-warp passes a `syncwarp` of its own half only: lane 15 then reads the element lane
/// 16 wrote, which no `syncwarp` of both orders.
#[kernel]
pub fn exchange_across_halves(out: &mut [u32]) {
    let mut s = shared_array![u32; 32];
    let t = thread_idx().x as usize;
    s[t] = t as u32;
    syncwarp(if t < 16 { 0x0000_ffff } else { 0xffff_0000 });
    out[t] = s[(t + 1) % 32];
}

/// The lanes of a warp whose round count (`lane % 8`, see [`uneven_rounds`]) exceeds `round`.
#[device]
pub fn lanes_past(round: u32) -> u32 {
    let mut m = 0u32;
    for l in 0..WARP_SIZE {
        if l % 8 > round {
            m |= 1 << l;
        }
    }
    m
}

/// Lane `l` runs `l % 8` rounds of a loop, so lanes leave it at different rounds; each round,
/// the lowest lane still in the loop passes its value to the others, by a shuffle whose mask
/// names the lanes still in. `out[i]` is the sum a lane gathered (values past `x` are 0).
#[kernel]
pub fn uneven_rounds(x: &[u32], out: &mut [u32]) {
    let i = grid(1);
    let mine = if i < x.len() { x[i] } else { 0 };
    let mut sum = 0;
    let mut round = 0;
    while round < lane_id() % 8 {
        let m = lanes_past(round);
        sum += shfl_sync(m, mine, m.trailing_zeros());
        round += 1;
    }
    if i < out.len() {
        out[i] = sum;
    }
}

/// Each block's sum of `x`: each warp sums its lanes by shuffles, lane 0 of each warp puts the
/// warp's sum in shared memory, and after a barrier every warp sums those by shuffles again;
/// thread 0 writes the block's total. Blocks of whole warps, up to 1024 threads.
#[kernel]
pub fn block_sums(x: &[u32], sums: &mut [u32]) {
    let mut totals = shared_array![u32; 32];
    let i = grid(1);
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let mut v = if i < x.len() { x[i] } else { 0 };
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        v += shfl_xor_sync(FULL, v, offset);
        offset /= 2;
    }
    if lane == 0 {
        totals[warp as usize] = v;
    }
    sync_threads();
    let warps = block_dim().x.div_ceil(WARP_SIZE);
    let mut t = if lane < warps {
        totals[lane as usize]
    } else {
        0
    };
    for k in 0..5 {
        t += shfl_xor_sync(FULL, t, 1 << k);
    }
    if thread_idx().x == 0 {
        sums[block_idx().x as usize] = t;
    }
}

/// Lane `gone` of each warp returns before a full-warp vote.
#[kernel]
pub fn vote_after_return(gone: u32, out: &mut [u32]) {
    let i = grid(1);
    if lane_id() == gone {
        return;
    }
    let b = ballot_sync(FULL, true);
    if i < out.len() {
        out[i] = b;
    }
}

/// Even lanes leave the loop after one round, odd ones after two, yet the second round's
/// shuffle names the whole warp.
#[kernel]
pub fn early_leavers(out: &mut [u32]) {
    let i = grid(1);
    let mut v = i as u32;
    let mut round = 0;
    while round < lane_id() % 2 + 1 {
        v += shfl_xor_sync(FULL, v, 1);
        round += 1;
    }
    if i < out.len() {
        out[i] = v;
    }
}

/// Lanes 16.. of each warp go around a full-warp shuffle in a loop and return in its second
/// round: the others' shuffles complete without them, as on a GPU, where lanes that exited
/// take no part. `out[i]` is `4 (i + (i ^ 1))` for lanes below 16, 0 for the others.
#[kernel]
pub fn leave_in_later_round(out: &mut [u32]) {
    let i = grid(1);
    let mut v = i as u32;
    let mut round = 0;
    while round < 3 {
        if lane_id() < 16 {
            v += shfl_xor_sync(FULL, v, 1);
        } else if round == 1 {
            return;
        }
        round += 1;
    }
    if i < out.len() {
        out[i] = v;
    }
}

/// Collectives in branches: each block's largest value (each warp's maximum by shuffles, then,
/// in a branch only the first warp takes, the maximum of the warps'), and for each lane with a
/// positive value its distance from the lowest such lane of its warp, which a shuffle naming
/// only those lanes (their ballot) brings; 0 for the other lanes. Blocks of whole warps.
#[kernel]
pub fn branch_collectives(x: &[i32], maxima: &mut [i32], ranks: &mut [u32]) {
    let mut best = shared_array![i32; 32];
    let i = grid(1);
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let v = if i < x.len() { x[i] } else { i32::MIN };
    let mut m = v;
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        m = m.max(shfl_xor_sync(FULL, m, offset));
        offset /= 2;
    }
    if lane == 0 {
        best[warp as usize] = m;
    }
    sync_threads();
    if warp == 0 {
        let warps = block_dim().x.div_ceil(WARP_SIZE);
        let mut b = if lane < warps {
            best[lane as usize]
        } else {
            i32::MIN
        };
        for k in 0..5 {
            b = b.max(shfl_xor_sync(FULL, b, 16 >> k));
        }
        if lane == 0 {
            maxima[block_idx().x as usize] = b;
        }
    }
    let positive = v > 0;
    let voters = ballot_sync(FULL, positive);
    if positive {
        let first = shfl_sync(voters, lane, voters.trailing_zeros());
        if i < ranks.len() {
            ranks[i] = lane - first;
        }
    }
}

/// The classic block reduction as CUDA programmers write it: a `while` loop over halving strides
/// with a barrier in it, then a warp tail of down-shuffles. Each block's sum lands in `sums`.
/// Blocks of 64 to 1024 threads, a power of two.
#[kernel]
pub fn block_reduce(x: &[f32], sums: &mut [f32]) {
    let mut s = shared_array![f32; 1024];
    let t = thread_idx().x as usize;
    let i = grid(1);
    s[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    let mut stride = block_dim().x as usize / 2;
    while stride > 32 {
        if t < stride {
            s[t] += s[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t < 32 {
        let mut v = s[t] + s[t + 32];
        let mut offset = 16;
        while offset > 0 {
            v += shfl_down_sync(FULL, v, offset);
            offset /= 2;
        }
        if t == 0 {
            sums[block_idx().x as usize] = v;
        }
    }
}

/// Barriers in loops whose bound and condition are locals, with warp collectives in their
/// bodies: three rounds of reading a neighbour's value through shared memory plus the partner
/// lane's by a shuffle, then two rounds of adding the count of the warp's odd values (a ballot).
/// Blocks of whole warps, at most 256 threads.
#[kernel]
pub fn looped_collectives(x: &[u32], out: &mut [u32]) {
    let mut s = shared_array![u32; 256];
    let t = thread_idx().x as usize;
    let i = grid(1);
    let mut v = if i < x.len() { x[i] } else { 0 };
    let rounds = 3;
    for r in 0..rounds {
        s[t] = v;
        sync_threads();
        v = s[(t + r + 1) % block_dim().x as usize] + shfl_xor_sync(FULL, v, 1);
        sync_threads();
    }
    let mut k = 2u32;
    while k > 0 {
        v += ballot_sync(FULL, v % 2 == 1).count_ones();
        sync_threads();
        k -= 1;
    }
    if i < out.len() {
        out[i] = v;
    }
}
