//! Random numbers against Numba's own generator: the states, the raw bits and the uniform draws
//! bit for bit, the normal draws within the bounds the `random` module states, on the host and
//! in kernels on every backend. The values come from `tests/data/xoroshiro128p_numba.py`.

use kernel_runtime::random::{
    create_xoroshiro128p_states, create_xoroshiro128p_states_on, init_xoroshiro128p_states,
    xoroshiro128p_next, xoroshiro128p_normal_f32, xoroshiro128p_normal_f64, xoroshiro128p_states,
    xoroshiro128p_uniform_f32, xoroshiro128p_uniform_f64, Xoroshiro128pState,
};
use kernel_suite::test_kernels::{random_bits, random_draws_f32, random_draws_f64};
use serde_json::Value;

mod common;
use common::backends;

/// One recorded case: the seed, the subsequence start, the states Numba made, and for some
/// states the draws of each kind from a fresh copy.
struct Case {
    seed: u64,
    start: u64,
    states: Vec<Xoroshiro128pState>,
    draws: Vec<Draws>,
}

struct Draws {
    index: usize,
    next: Vec<u64>,
    uniform_f32: Vec<f32>,
    uniform_f64: Vec<f64>,
    normal_f32: Vec<f32>,
    normal_f64: Vec<f64>,
}

fn cases() -> Vec<Case> {
    let text = include_str!("data/xoroshiro128p_numba.json");
    let json: Value = serde_json::from_str(text).expect("the recorded values parse");
    let u64_of = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .expect("a u64")
    };
    let hex = |v: &Value| u64::from_str_radix(v.as_str().expect("hex bits"), 16).expect("hex");
    let list = |v: &Value| v.as_array().expect("a list").clone();
    let f32s = |v: &Value| -> Vec<f32> {
        list(v)
            .iter()
            .map(|b| f32::from_bits(hex(b) as u32))
            .collect()
    };
    let f64s = |v: &Value| -> Vec<f64> { list(v).iter().map(|b| f64::from_bits(hex(b))).collect() };
    list(&json["cases"])
        .iter()
        .map(|c| Case {
            seed: u64_of(&c["seed"]),
            start: c["subsequence_start"].as_u64().expect("a start"),
            states: list(&c["states"])
                .iter()
                .map(|s| Xoroshiro128pState {
                    s0: u64_of(&s[0]),
                    s1: u64_of(&s[1]),
                })
                .collect(),
            draws: list(&c["draws"])
                .iter()
                .map(|d| Draws {
                    index: d["index"].as_u64().expect("an index") as usize,
                    next: list(&d["next"]).iter().map(u64_of).collect(),
                    uniform_f32: f32s(&d["uniform_f32"]),
                    uniform_f64: f64s(&d["uniform_f64"]),
                    normal_f32: f32s(&d["normal_f32"]),
                    normal_f64: f64s(&d["normal_f64"]),
                })
                .collect(),
        })
        .collect()
}

/// Normal draws: `f32` within 4 units in the last place of Numba's, `f64` within a relative
/// 1e-6 (its logarithm is taken in `f32`, whose last bit may differ between maths libraries).
fn close_f32(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| (g.to_bits() as i64 - w.to_bits() as i64).abs() <= 4)
}

fn close_f64(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() <= 1e-6 * w.abs().max(1e-3))
}

#[test]
fn host_states_and_draws_are_numbas() {
    for case in cases() {
        let states = xoroshiro128p_states(case.states.len(), case.seed, case.start).unwrap();
        assert_eq!(
            states, case.states,
            "seed {} start {}",
            case.seed, case.start
        );
        for d in &case.draws {
            let (i, k) = (d.index, d.next.len());
            assert_eq!(draws(&states, k, |s| xoroshiro128p_next(s, i)), d.next);
            let uniform32 = draws(&states, k, |s| xoroshiro128p_uniform_f32(s, i));
            assert_eq!(uniform32, d.uniform_f32);
            let uniform64 = draws(&states, k, |s| xoroshiro128p_uniform_f64(s, i));
            assert_eq!(uniform64, d.uniform_f64);
            let normal32 = draws(&states, k, |s| xoroshiro128p_normal_f32(s, i));
            assert!(
                close_f32(&normal32, &d.normal_f32),
                "{normal32:?} {:?}",
                d.normal_f32
            );
            let normal64 = draws(&states, k, |s| xoroshiro128p_normal_f64(s, i));
            assert!(close_f64(&normal64, &d.normal_f64), "{normal64:?}");
        }
    }
}

/// `k` draws of `draw` from a fresh copy of `states`.
fn draws<T>(
    states: &[Xoroshiro128pState],
    k: usize,
    draw: impl Fn(&mut [Xoroshiro128pState]) -> T,
) -> Vec<T> {
    let mut copy = states.to_vec();
    (0..k).map(|_| draw(&mut copy)).collect()
}

#[test]
fn kernels_draw_numbas_numbers_on_every_backend() {
    for dev in backends() {
        for case in cases() {
            let n = case.states.len();
            let draws = case.draws[0].next.len();
            let fresh = || create_xoroshiro128p_states(&dev, n, case.seed, case.start).unwrap();
            let mut states = fresh();
            assert_eq!(states.to_vec().unwrap(), case.states);
            let what = format!("{:?}: seed {} start {}", dev.kind(), case.seed, case.start);

            let mut bits = dev.zeros::<u64, _>((n, draws)).unwrap();
            random_bits.launch(1, 32, (&mut states, &mut bits)).unwrap();
            // Each kind of draw from fresh states: uniform, or normal.
            let f32s = |normal| {
                let mut out = dev.zeros::<f32, _>((n, draws)).unwrap();
                random_draws_f32
                    .launch(1, 32, (&mut fresh(), normal, &mut out))
                    .unwrap();
                out.to_host().unwrap()
            };
            let f64s = |normal| {
                let mut out = dev.zeros::<f64, _>((n, draws)).unwrap();
                random_draws_f64
                    .launch(1, 32, (&mut fresh(), normal, &mut out))
                    .unwrap();
                out.to_host().unwrap()
            };
            let (bits, u32s, u64s) = (bits.to_host().unwrap(), f32s(false), f64s(false));
            let (n32, n64) = (f32s(true), f64s(true));
            for d in &case.draws {
                let i = d.index;
                assert_eq!(bits.row(i).to_vec(), d.next, "{what}");
                assert_eq!(u32s.row(i).to_vec(), d.uniform_f32, "{what}");
                assert_eq!(u64s.row(i).to_vec(), d.uniform_f64, "{what}");
                assert!(close_f32(&n32.row(i).to_vec(), &d.normal_f32), "{what}");
                assert!(close_f64(&n64.row(i).to_vec(), &d.normal_f64), "{what}");
            }
            // The states advanced in place: setting them again starts the streams over.
            assert_ne!(states.to_vec().unwrap(), case.states);
            init_xoroshiro128p_states(&mut states, case.seed, case.start).unwrap();
            assert_eq!(states.to_vec().unwrap(), case.states, "{what}");
        }
    }
}

#[test]
fn states_made_on_a_stream_are_numbas_and_kernels_on_it_read_them() {
    for dev in backends() {
        let s = dev.stream().unwrap();
        for case in cases() {
            let (n, draws) = (case.states.len(), case.draws[0].next.len());
            let mut states = create_xoroshiro128p_states_on(&s, n, case.seed, case.start).unwrap();
            let mut bits = dev.zeros::<u64, _>((n, draws)).unwrap();
            let config = kernel_runtime::LaunchConfig::new(1, 32)
                .unwrap()
                .on_stream(&s);
            random_bits
                .launch_with(config, (&mut states, &mut bits))
                .unwrap();
            s.synchronize().unwrap();
            let bits = bits.to_host().unwrap();
            for d in &case.draws {
                assert_eq!(bits.row(d.index).to_vec(), d.next, "{:?}", dev.kind());
            }
        }
    }
}

#[test]
fn normal_draws_have_mean_zero_and_deviation_one() {
    let mut states = xoroshiro128p_states(1, 2024, 0).unwrap();
    let n = 200_000;
    let xs: Vec<f64> = (0..n)
        .map(|_| xoroshiro128p_normal_f64(&mut states[..], 0))
        .collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    // Five standard errors: 5 / sqrt(n) for the mean, about 5 * sqrt(2 / n) for the variance.
    assert!(mean.abs() < 0.012, "mean {mean}");
    assert!((var - 1.0).abs() < 0.016, "variance {var}");
}

#[test]
fn states_the_device_cannot_hold_are_typed_errors_and_any_start_is_quick() {
    for dev in common::backends() {
        let huge = create_xoroshiro128p_states(&dev, 1 << 40, 1, 0).map(drop);
        assert!(
            matches!(huge, Err(kernel_runtime::Error::OutOfMemory { .. })),
            "{huge:?}"
        );
        let past = create_xoroshiro128p_states(&dev, usize::MAX, 1, 0).map(drop);
        assert!(
            matches!(past, Err(kernel_runtime::Error::TooLarge { .. })),
            "{past:?}"
        );
        // u64::MAX · 2^64 steps ahead: 64 jumps by powers of two, not u64::MAX jumps.
        let far = create_xoroshiro128p_states(&dev, 4, 1, u64::MAX).unwrap();
        let host = xoroshiro128p_states(4, 1, u64::MAX).unwrap();
        assert_eq!(far.to_vec().unwrap(), host);
    }
}

/// Kernels that misuse the generators.
mod misuse {
    use kernel_runtime::prelude::*;

    /// Every thread draws from state 0: a race on it.
    #[kernel]
    pub fn all_from_state_zero(states: &mut [Xoroshiro128pState], out: &mut [f32]) {
        let i = grid(1);
        if i < out.len() {
            out[i] = xoroshiro128p_uniform_f32(&mut states, 0);
        }
    }

    /// Thread `i` draws from state `i`, past the states' end for most.
    #[kernel]
    pub fn past_the_states(states: &mut [Xoroshiro128pState], out: &mut [f32]) {
        let i = grid(1);
        if i < out.len() {
            out[i] = xoroshiro128p_uniform_f32(&mut states, i);
        }
    }
}
use misuse::{all_from_state_zero, past_the_states};

#[test]
fn checked_mode_names_the_kernels_line_not_the_generators() {
    let dev = kernel_runtime::Device::cpu_checked();
    let mut out = dev.zeros::<f32, _>(64).unwrap();
    let mut states = create_xoroshiro128p_states(&dev, 4, 1, 0).unwrap();
    let race = all_from_state_zero
        .launch(2, 32, (&mut states, &mut out))
        .unwrap_err()
        .to_string();
    let past = past_the_states
        .launch(2, 32, (&mut states, &mut out))
        .unwrap_err()
        .to_string();
    for err in [race, past] {
        assert!(err.contains("tests/random.rs:"), "{err}");
        assert!(!err.contains("src/random.rs"), "{err}");
    }
}
