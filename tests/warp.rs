//! The warp primitives on every backend: shuffles of each kind and width, votes, matches, a
//! warp-then-block scan; and, on the CPU backends, warps whose lanes do not meet, reported with
//! the lane that did not come.

use kernel_runtime::prelude::*;
use kernel_runtime::{DeviceKind, Error, Finding};
use kernel_suite::reference::SplitMix64;
use kernel_suite::warp_kernels::*;

mod common;
use common::{assert_mentions, backends};

/// The CPU backends (a GPU would hang or be undefined on the kernels that misuse warps).
fn cpu_backends() -> Vec<Device> {
    vec![Device::cpu(), Device::cpu_checked()]
}

#[test]
fn warp_sums_by_xor_and_down_shuffles() {
    const { assert!(warp_sums::META.split && !block_scan::META.split) };
    let n = 200usize;
    let mut rng = SplitMix64(5);
    // Small integers, so that every order of summing gives the same floats.
    let x: Vec<f32> = (0..n).map(|_| (rng.next_u64() % 100) as f32).collect();
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        let mut sums = dev.zeros::<f32, _>(n).unwrap();
        let mut wide = dev.zeros::<f64, _>(n.div_ceil(32)).unwrap();
        warp_sums
            .launch(n.div_ceil(96), 96, (&dx, &mut sums, &mut wide))
            .unwrap();
        let expect: Vec<f32> = x.chunks(32).map(|c| c.iter().sum()).collect();
        let sums = sums.to_vec().unwrap();
        for (i, s) in sums.iter().enumerate() {
            assert_eq!(*s, expect[i / 32], "{:?}: sums[{i}]", dev.kind());
        }
        let wide = wide.to_vec().unwrap();
        let expect: Vec<f64> = expect.iter().map(|&s| s as f64).collect();
        assert_eq!(wide, expect, "{:?}", dev.kind());
    }
}

#[test]
fn shuffles_of_each_kind_follow_the_lanes_of_a_2d_block() {
    let (src, delta) = (35u32, 3u32);
    let mine = |t: u32| 1000 * (t / 32) + t % 32;
    let expect: Vec<[u32; 7]> = (0..64u32)
        .map(|t| {
            let (lane, base) = (t % 32, t / 32 * 32);
            [
                lane,
                mine(base + src % 32),
                if lane >= delta {
                    mine(t - delta)
                } else {
                    mine(t)
                },
                if lane + delta < 32 {
                    mine(t + delta)
                } else {
                    mine(t)
                },
                mine(base + (lane ^ delta)),
                src % 32,
                t / 32,
            ]
        })
        .collect();
    for dev in backends() {
        let mut out = dev.zeros::<u32, _>((64, 7)).unwrap();
        shuffle_kinds
            .launch(1, (8, 8), (src, delta, &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        for (t, row) in expect.iter().enumerate() {
            assert_eq!(
                out.row(t).to_vec(),
                row.to_vec(),
                "{:?}: thread {t}",
                dev.kind()
            );
        }
    }
}

#[test]
fn votes_and_matches_per_warp() {
    let mut rng = SplitMix64(17);
    // Warp 0: mixed signs and repeated values; warp 1: one positive value throughout.
    let x: Vec<i32> = (0..64)
        .map(|i| {
            if i < 32 {
                (rng.next_u64() % 5) as i32 - 2
            } else {
                5
            }
        })
        .collect();
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>((64, 8)).unwrap();
        warp_votes.launch(1, 64, (&dx, &mut out)).unwrap();
        let out = out.to_host().unwrap();
        for (w, lanes) in x.chunks(32).enumerate() {
            let ballot = (0..32).fold(0u32, |m, l| m | ((lanes[l] > 0) as u32) << l);
            let same = lanes.iter().all(|&v| v == lanes[0]);
            for l in 0..32 {
                let matching = (0..32)
                    .filter(|&k| lanes[k] == lanes[l])
                    .fold(0u32, |m, k| m | 1 << k);
                let expect = [
                    ballot,
                    (ballot == u32::MAX) as u32,
                    (ballot != 0) as u32,
                    (ballot == 0 || ballot == u32::MAX) as u32,
                    matching,
                    if same { u32::MAX } else { 0 },
                    same as u32,
                    ballot & ((1u32 << l) - 1),
                ];
                let t = 32 * w + l;
                assert_eq!(
                    out.row(t).to_vec(),
                    expect.to_vec(),
                    "{:?}: thread {t}",
                    dev.kind()
                );
            }
        }
    }
}

#[test]
fn block_scan_by_warp_shuffles_and_a_barrier() {
    let mut rng = SplitMix64(23);
    let data: Vec<u32> = (0..1000).map(|_| (rng.next_u64() % 100) as u32).collect();
    for dev in backends() {
        for threads in [32usize, 96, 256, 1024] {
            let mut d = dev.to_device(&data).unwrap();
            block_scan
                .launch(data.len().div_ceil(threads), threads, &mut d)
                .unwrap();
            let got = d.to_vec().unwrap();
            let expect: Vec<u32> = data
                .chunks(threads)
                .flat_map(|c| {
                    c.iter().scan(0, |s, &v| {
                        *s += v;
                        Some(*s)
                    })
                })
                .collect();
            assert_eq!(got, expect, "{:?}: {threads} threads", dev.kind());
        }
    }
}

#[test]
fn lanes_that_returned_take_no_part() {
    for dev in backends() {
        for stay in [16u32, 24, 32] {
            let n = 64;
            let mut active = dev.zeros::<u32, _>(n).unwrap();
            let mut votes = dev.zeros::<u32, _>(n).unwrap();
            let mut halves = dev.zeros::<u32, _>(n).unwrap();
            partial_warps
                .launch(1, n, (stay, &mut active, &mut votes, &mut halves))
                .unwrap();
            let (active, votes, halves) = (
                active.to_vec().unwrap(),
                votes.to_vec().unwrap(),
                halves.to_vec().unwrap(),
            );
            let m = if stay == 32 {
                u32::MAX
            } else {
                (1 << stay) - 1
            };
            for t in 0..n {
                let lane = t as u32 % 32;
                if lane >= stay {
                    assert_eq!((active[t], votes[t], halves[t]), (0, 0, 0));
                    continue;
                }
                let half: u32 = if lane < 16 {
                    (0..16).sum()
                } else {
                    (16..stay).sum()
                };
                assert_eq!(
                    (votes[t], halves[t]),
                    (m, half),
                    "{:?}: thread {t}",
                    dev.kind()
                );
                if dev.kind() == DeviceKind::Cpu || dev.kind() == DeviceKind::CpuChecked {
                    assert_eq!(active[t], m, "the lanes that have not returned");
                } else {
                    // A GPU may run the lanes apart: only the caller is sure to be active.
                    assert!(active[t] & !m == 0 && active[t] & 1 << lane != 0);
                }
            }
        }
        // A block of one thread is a warp of one lane.
        let [mut a, mut v, mut h] = [0; 3].map(|_| dev.zeros::<u32, _>(1).unwrap());
        partial_warps
            .launch(1, 1, (1, &mut a, &mut v, &mut h))
            .unwrap();
        let got = [&a, &v, &h].map(|x| x.to_vec().unwrap()[0]);
        assert_eq!(got, [1, 1, 0], "{:?}", dev.kind());
    }
}

#[test]
fn collectives_in_device_functions_need_barrier_support() {
    for dev in backends() {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        warp_totals.launch(1, 64, &mut out).unwrap();
        let expect: Vec<u32> = (0..64u32)
            .map(|i| (i / 32 * 32..i / 32 * 32 + 32).sum())
            .collect();
        assert_eq!(out.to_vec().unwrap(), expect, "{:?}", dev.kind());
    }
    for dev in cpu_backends() {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        let msg = warp_totals_unmarked
            .launch(1, 64, &mut out)
            .unwrap_err()
            .to_string();
        assert_mentions(
            &msg,
            &[
                "`warp_totals_unmarked`",
                "shfl_xor_sync",
                "#[kernel(barriers)]",
            ],
        );
    }
}

/// The finding of a launch on the checked backend, or the message of one on the fast backend.
fn failure(dev: &Device, result: Result<(), Error>) -> String {
    let err = result.expect_err("the warp must not meet");
    if dev.kind() == DeviceKind::CpuChecked {
        let Error::CheckFailed { finding, .. } = &err else {
            panic!("expected a finding: {err}")
        };
        assert!(
            matches!(**finding, Finding::DivergentWarp { .. }),
            "{finding}"
        );
    }
    err.to_string()
}

#[test]
fn warps_that_do_not_meet_are_reported_not_hung() {
    const { assert!(shuffle_from_half::META.split && !vote_beside_barrier::META.split) };
    for dev in cpu_backends() {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        // Lanes 16.. take the other way around a full-warp shuffle and return without meeting
        // again: they take no part, as on a GPU (the split kernel knows nothing after the `if`
        // meets; the coroutines run them to their end first). Lane 15's source, lane 16, is
        // then not in the shuffle: it keeps its own value.
        shuffle_from_half.launch(1, 64, (16, &mut out)).unwrap();
        let expect: Vec<u32> = (0..64)
            .map(|i| match i % 32 {
                l if l < 15 => i + 1,
                15 => i,
                _ => 0,
            })
            .collect();
        assert_eq!(out.to_vec().unwrap(), expect, "{:?}", dev.kind());
        // Lanes that took the other way around a collective, and meet again after it.
        let msg = failure(&dev, branch_then_all.launch(1, 32, &mut out));
        let absent = if dev.kind() == DeviceKind::Cpu {
            "lane 16 (thread (16, 0, 0)) is not there: it left a `while` loop, or took the other \
             branch of an `if`, around it"
        } else {
            "lane 16 (thread (16, 0, 0)) waits at shfl_xor_sync(0xffffffff)"
        };
        assert_mentions(
            &msg,
            &[
                "divergent warp in block (0, 0, 0)",
                "shfl_down_sync(0xffffffff) at",
                absent,
            ],
        );
        let msg = failure(&dev, vote_beside_barrier.launch(1, 32, &mut out));
        assert_mentions(
            &msg,
            &["ballot_sync(0xffffffff)", "waits at sync_threads()"],
        );
        let msg = failure(&dev, vote_without_self.launch(1, 32, &mut out));
        assert_mentions(&msg, &["leaves out its own lane 0"]);
        // The device still works afterwards.
        shuffle_from_half.launch(1, 64, (32, &mut out)).unwrap();
        let expect: Vec<u32> = (0..64)
            .map(|i| if i % 32 == 31 { i } else { i + 1 })
            .collect();
        assert_eq!(out.to_vec().unwrap(), expect);
    }
}

#[test]
fn a_full_mask_serves_a_partial_warp_as_on_a_gpu() {
    // The last warp of a 48-thread block has 16 lanes, a 10-thread block's only warp 10, a
    // 1-thread block's 1: a full mask names lanes that do not exist, which take no part.
    for threads in [48usize, 10, 1] {
        let want: Vec<u32> = (0..threads)
            .flat_map(|i| {
                let lanes = (threads - i / 32 * 32).min(32) as u32;
                let lane = i as u32 % 32;
                let of = |f: &dyn Fn(u32) -> bool| {
                    (0..lanes).filter(|&l| f(l)).fold(0, |m, l| m | 1 << l)
                };
                [
                    of(&|l| l % 3 == 0),
                    u32::from(lanes > 21),
                    of(&|l| l % 4 == lane % 4),
                    1,
                ]
            })
            .collect();
        for dev in backends() {
            let mut out = dev.zeros::<u32, _>(4 * threads).unwrap();
            full_mask_votes.launch(1, threads as u32, &mut out).unwrap();
            assert_eq!(
                out.to_vec().unwrap(),
                want,
                "{:?}, {threads} threads",
                dev.kind()
            );
        }
    }
}

#[test]
fn activemask_in_a_branch_gives_the_lanes_that_took_it() {
    // 40 threads: a full warp, then one of 8 lanes.
    let n = 40usize;
    let want: Vec<u32> = (0..n)
        .flat_map(|i| {
            let lanes = (n - i / 32 * 32).min(32) as u32;
            let of = |f: &dyn Fn(u32) -> bool| {
                (0..lanes).filter(|&l| f(l)).fold(0u32, |m, l| m | 1 << l)
            };
            let lane = i as u32 % 32;
            let taken = of(&|l| l % 3 == 0);
            let all = of(&|_| true);
            match lane % 3 {
                0 => [taken, 0, all],
                _ => [0, all & !taken, all],
            }
        })
        .collect();
    for dev in cpu_backends() {
        let mut out = dev.zeros::<u32, _>(3 * n).unwrap();
        branch_activemask.launch(1, n as u32, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), want, "{:?}", dev.kind());
    }
}

#[test]
fn lanes_leave_a_loop_of_collectives_at_different_rounds() {
    const { assert!(uneven_rounds::META.split) };
    let n = 200usize;
    let x: Vec<u32> = (0..n as u32).map(|i| 3 * i + 1).collect();
    let at = |i: usize| if i < n { x[i] } else { 0 };
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>(n).unwrap();
        uneven_rounds
            .launch(n.div_ceil(64), 64, (&dx, &mut out))
            .unwrap();
        let got = out.to_vec().unwrap();
        for (i, &g) in got.iter().enumerate() {
            // Round `r` brings the value of lane `r + 1`, the lowest still in the loop.
            let base = i / 32 * 32;
            let expect: u32 = (0..i % 32 % 8).map(|r| at(base + r + 1)).sum();
            assert_eq!(g, expect, "{:?}: out[{i}]", dev.kind());
        }
    }
}

#[test]
fn block_sums_by_shuffles_on_both_sides_of_a_barrier() {
    const { assert!(block_sums::META.split) };
    let mut rng = SplitMix64(41);
    let x: Vec<u32> = (0..5000).map(|_| (rng.next_u64() % 1000) as u32).collect();
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        for threads in [32usize, 96, 1024] {
            let blocks = x.len().div_ceil(threads);
            let mut sums = dev.zeros::<u32, _>(blocks).unwrap();
            block_sums
                .launch(blocks, threads, (&dx, &mut sums))
                .unwrap();
            let expect: Vec<u32> = x.chunks(threads).map(|c| c.iter().sum()).collect();
            assert_eq!(
                sums.to_vec().unwrap(),
                expect,
                "{:?}: {threads}",
                dev.kind()
            );
        }
    }
}

#[test]
fn lanes_that_leave_a_loop_rounds_later_take_no_part_in_its_collectives() {
    // The loop's next round meets again, and lanes may leave it: not split, run as coroutines.
    const { assert!(!leave_in_later_round::META.split) };
    let expect: Vec<u32> = (0..64u32)
        .map(|i| if i % 32 < 16 { 4 * (i + (i ^ 1)) } else { 0 })
        .collect();
    for dev in backends() {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        leave_in_later_round.launch(1, 64, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), expect, "{:?}", dev.kind());
    }
}

#[test]
fn collectives_in_branches_run_with_the_lanes_that_took_them() {
    const { assert!(branch_collectives::META.split) };
    let mut rng = SplitMix64(7);
    let x: Vec<i32> = (0..3000)
        .map(|_| (rng.next_u64() % 2001) as i32 - 1000)
        .collect();
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        for threads in [32usize, 256] {
            let blocks = x.len().div_ceil(threads);
            let mut maxima = dev.zeros::<i32, _>(blocks).unwrap();
            let mut ranks = dev.zeros::<u32, _>(x.len()).unwrap();
            branch_collectives
                .launch(blocks, threads, (&dx, &mut maxima, &mut ranks))
                .unwrap();
            let expect: Vec<i32> = x
                .chunks(threads)
                .map(|c| *c.iter().max().unwrap())
                .collect();
            assert_eq!(maxima.to_vec().unwrap(), expect, "{:?}", dev.kind());
            let ranks = ranks.to_vec().unwrap();
            for (w, warp) in x.chunks(32).enumerate() {
                let first = warp.iter().position(|&v| v > 0);
                for (l, &v) in warp.iter().enumerate() {
                    let expect = match first {
                        Some(f) if v > 0 => (l - f) as u32,
                        _ => 0,
                    };
                    let i = w * 32 + l;
                    assert_eq!(ranks[i], expect, "{:?}: ranks[{i}]", dev.kind());
                }
            }
        }
    }
}

#[test]
fn lanes_that_returned_or_leave_for_good_take_no_part() {
    for dev in cpu_backends() {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        // Lane 3 of each warp returns before a full-warp vote: the others vote without it.
        vote_after_return.launch(1, 64, (3, &mut out)).unwrap();
        let expect: Vec<u32> = (0..64)
            .map(|i| if i % 32 == 3 { 0 } else { !(1 << 3) })
            .collect();
        assert_eq!(out.to_vec().unwrap(), expect, "{:?}", dev.kind());
        // Even lanes leave the loop after one round, yet the second round's shuffle names the
        // whole warp.
        early_leavers.launch(1, 32, &mut out).unwrap();
        // The odd lanes' second shuffle is among themselves: each lane's source (even) has
        // left, so it keeps its own value.
        let expect: Vec<u32> = (0..32u32)
            .map(|i| {
                let first = i + (i ^ 1);
                if i % 2 == 0 {
                    first
                } else {
                    2 * first
                }
            })
            .collect();
        assert_eq!(out.to_vec().unwrap()[..32], expect[..], "{:?}", dev.kind());
    }
    // Every lane there: no report.
    let dev = Device::cpu();
    let mut out = dev.zeros::<u32, _>(64).unwrap();
    vote_after_return.launch(1, 64, (32, &mut out)).unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&b| b == u32::MAX));
}

#[test]
fn syncwarp_orders_lanes_that_pass_data_through_shared_memory() {
    let n = 200usize;
    let x: Vec<u32> = (0..n as u32).map(|i| 7 * i + 3).collect();
    let at = |i: usize| if i < n { x[i] } else { 0 };
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>((n, 2)).unwrap();
        exchange_through_shared
            .launch(n.div_ceil(64), 64, (&dx, &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        for i in 0..n {
            let got = (out[[i, 0]], out[[i, 1]]);
            assert_eq!(got, (at(i ^ 1), at(i / 32 * 32)), "{:?}: {i}", dev.kind());
        }
    }
}

#[test]
fn checked_mode_finds_lanes_that_no_syncwarp_orders() {
    let dev = Device::cpu_checked();
    let mut out = dev.zeros::<u32, _>(64).unwrap();
    for (result, writer, reader) in [
        // A shuffle orders no memory access.
        (exchange_after_shuffle.launch(1, 64, &mut out), 1, 0),
        // A syncwarp orders the lanes of its mask only.
        (exchange_across_halves.launch(1, 32, &mut out), 16, 15),
    ] {
        let err = result.expect_err("the lanes race");
        let Error::CheckFailed { finding, .. } = &err else {
            panic!("expected a finding: {err}")
        };
        let Finding::DataRace {
            index,
            first,
            second,
            ..
        } = &**finding
        else {
            panic!("expected a data race: {finding}")
        };
        assert_eq!(
            (index[0], first.thread.x, second.thread.x),
            (writer as usize, writer, reader),
            "{finding}"
        );
        assert_mentions(&err.to_string(), &["a syncwarp() of both"]);
    }
}

#[test]
fn the_classic_block_reduction_with_a_warp_tail_sums_each_block() {
    const { assert!(block_reduce::META.split) };
    let mut rng = SplitMix64(11);
    let x: Vec<f32> = (0..1000).map(|_| (rng.next_u64() % 100) as f32).collect();
    for threads in [64usize, 256, 1024] {
        let blocks = x.len().div_ceil(threads);
        let expect: Vec<f32> = x.chunks(threads).map(|c| c.iter().sum()).collect();
        for dev in backends() {
            let dx = dev.to_device(&x).unwrap();
            let mut sums = dev.zeros::<f32, _>(blocks).unwrap();
            block_reduce
                .launch(blocks, threads, (&dx, &mut sums))
                .unwrap();
            let what = format!("{:?}, {threads} threads", dev.kind());
            assert_eq!(sums.to_vec().unwrap(), expect, "{what}");
        }
    }
}

#[test]
fn loops_over_locals_hold_barriers_and_collectives() {
    const { assert!(looped_collectives::META.split) };
    let (n, threads) = (200usize, 64usize);
    let mut rng = SplitMix64(12);
    let x: Vec<u32> = (0..n).map(|_| (rng.next_u64() % 100) as u32).collect();
    let mut expect = Vec::new();
    for start in (0..n).step_by(threads) {
        let mut v: Vec<u32> = (start..start + threads)
            .map(|i| x.get(i).copied().unwrap_or(0))
            .collect();
        for r in 0..3 {
            let s = v.clone();
            v = (0..threads)
                .map(|t| s[(t + r + 1) % threads] + s[t ^ 1])
                .collect();
        }
        for _ in 0..2 {
            let odd: Vec<u32> = v
                .chunks(32)
                .map(|w| w.iter().filter(|&&e| e % 2 == 1).count() as u32)
                .collect();
            for (t, e) in v.iter_mut().enumerate() {
                *e += odd[t / 32];
            }
        }
        expect.extend(v);
    }
    expect.truncate(n);
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>(n).unwrap();
        looped_collectives
            .launch(n.div_ceil(threads), threads, (&dx, &mut out))
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), expect, "{:?}", dev.kind());
    }
}
