//! Random numbers in kernels, as Numba's `numba.cuda.random`: its names, its generator
//! (xoroshiro128+, seeded by SplitMix64) and its bit stream.
//!
//! Each thread draws from a generator of its own, one [`Xoroshiro128pState`] of an array of
//! states that [`create_xoroshiro128p_states`] makes on a device: state `i` is state 0 jumped
//! ahead `i · 2^64` steps (and state 0 is `subsequence_start · 2^64` steps past the seed's),
//! so the threads' streams do not overlap while each draws fewer than 2^64 numbers. In a
//! kernel, `xoroshiro128p_uniform_f32(&mut states, i)` draws from state `i` and advances it.
//!
//! The same seed gives the numbers Numba gives: the states and the uniform draws bit for bit;
//! the normal draws (Box–Muller, which uses two uniform draws and keeps one value) up to the
//! last bits of the `ln` and `cos` they use, which differ between maths libraries (the tests
//! compare with values recorded from Numba, `tests/data/xoroshiro128p_numba.py`).
//!
//! ```
//! use kernel_runtime::prelude::*;
//! use kernel_runtime::random::{create_xoroshiro128p_states, xoroshiro128p_uniform_f32, Xoroshiro128pState};
//!
//! /// Counts, per thread, the points of `draws` random ones that fall in the unit circle.
//! #[kernel]
//! fn hits(states: &mut [Xoroshiro128pState], draws: u32, out: &mut [u32]) {
//!     let i = grid(1);
//!     if i < out.len() {
//!         let mut inside = 0;
//!         for _ in 0..draws {
//!             let x = xoroshiro128p_uniform_f32(&mut states, i);
//!             let y = xoroshiro128p_uniform_f32(&mut states, i);
//!             inside += u32::from(x * x + y * y <= 1.0);
//!         }
//!         out[i] = inside;
//!     }
//! }
//!
//! let dev = Device::cpu();
//! let mut states = create_xoroshiro128p_states(&dev, 256, 1, 0)?;
//! let mut out = dev.zeros::<u32, _>(256)?;
//! hits.launch(1, 256, (&mut states, 1000, &mut out))?;
//! let pi = 4.0 * out.to_vec()?.iter().sum::<u32>() as f64 / 256_000.0;
//! assert!((pi - std::f64::consts::PI).abs() < 0.05);
//! # Ok::<(), kernel_runtime::Error>(())
//! ```

use crate::device_copy::{AnyBitPattern, DeviceCopy};
use crate::math::DeviceFloat;
use core::ops::IndexMut;

/// The state of one xoroshiro128+ generator: Numba's `xoroshiro128p_dtype`, two `u64`s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Xoroshiro128pState {
    /// The first word.
    pub s0: u64,
    /// The second word.
    pub s1: u64,
}

// SAFETY: `#[repr(C)]`, two `u64`s, no pointers; all-zero bits are a value.
unsafe impl DeviceCopy for Xoroshiro128pState {}
// SAFETY: any bits of two `u64`s are a value, and two `u64`s leave no padding.
unsafe impl AnyBitPattern for Xoroshiro128pState {}

/// The polynomial of a jump of 2^64 steps, from the generator's authors.
const JUMP: [u64; 2] = [0xBEAC_0467_EBA5_FACB, 0xD86B_048B_86AA_9922];

impl Xoroshiro128pState {
    /// The state SplitMix64 makes of `seed` (both words the same, as Numba sets them).
    pub const fn seeded(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Xoroshiro128pState { s0: z, s1: z }
    }

    /// The next 64 random bits; advances the state one step.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let (s0, mut s1) = (self.s0, self.s1);
        let result = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s0 = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s1 = s1.rotate_left(36);
        result
    }

    /// Advances the state 2^64 steps.
    pub fn jump(&mut self) {
        let (mut s0, mut s1) = (0, 0);
        for word in JUMP {
            for b in 0..64 {
                if word & (1u64 << b) != 0 {
                    s0 ^= self.s0;
                    s1 ^= self.s1;
                }
                self.next_u64();
            }
        }
        *self = Xoroshiro128pState { s0, s1 };
    }

    /// Advances the state `times · 2^64` steps, as `times` calls of [`jump`](Self::jump) do, in
    /// at most 64 steps of its own: a jump is a linear map of the state's 128 bits, and the
    /// maps of 2^k jumps are made once, by squaring (Numba jumps `times` times, which
    /// `subsequence_start = u64::MAX` would not finish).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn jump_by(&mut self, times: u64) {
        let powers = jump_powers();
        let mut bits = self.bits();
        for (k, map) in powers.iter().enumerate() {
            if times >> k & 1 == 1 {
                bits = map.apply(bits);
            }
        }
        *self = Self::from_bits(bits);
    }

    fn bits(self) -> u128 {
        u128::from(self.s0) | u128::from(self.s1) << 64
    }

    fn from_bits(bits: u128) -> Self {
        Xoroshiro128pState {
            s0: bits as u64,
            s1: (bits >> 64) as u64,
        }
    }
}

/// A linear map of a state's 128 bits over GF(2): `columns[j]` is the image of bit `j` alone.
#[cfg(not(target_arch = "nvptx64"))]
struct BitMap {
    columns: [u128; 128],
}

#[cfg(not(target_arch = "nvptx64"))]
impl BitMap {
    fn apply(&self, bits: u128) -> u128 {
        let (mut image, mut rest) = (0, bits);
        while rest != 0 {
            image ^= self.columns[rest.trailing_zeros() as usize];
            rest &= rest - 1;
        }
        image
    }

    /// The map applied twice.
    fn squared(&self) -> BitMap {
        BitMap {
            columns: core::array::from_fn(|j| self.apply(self.columns[j])),
        }
    }
}

/// The maps of 2^k jumps, k = 0..64, made at the first use.
#[cfg(not(target_arch = "nvptx64"))]
fn jump_powers() -> &'static [BitMap] {
    static POWERS: std::sync::OnceLock<Vec<BitMap>> = std::sync::OnceLock::new();
    POWERS.get_or_init(|| {
        let jump = BitMap {
            columns: core::array::from_fn(|j| {
                let mut state = Xoroshiro128pState::from_bits(1 << j);
                state.jump();
                state.bits()
            }),
        };
        let mut powers = vec![jump];
        while powers.len() < 64 {
            let next = powers[powers.len() - 1].squared();
            powers.push(next);
        }
        powers
    })
}

/// The top 53 bits of `x` as an `f64` in `[0, 1)`.
#[inline]
fn unit_f64(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The next 64 random bits of `states[index]`, which advances one step.
#[inline]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn xoroshiro128p_next<S>(states: &mut S, index: usize) -> u64
where
    S: IndexMut<usize, Output = Xoroshiro128pState> + ?Sized,
{
    states[index].next_u64()
}

/// Advances `states[index]` 2^64 steps.
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn xoroshiro128p_jump<S>(states: &mut S, index: usize)
where
    S: IndexMut<usize, Output = Xoroshiro128pState> + ?Sized,
{
    states[index].jump()
}

/// A uniform `f64` in `[0, 1)` from `states[index]` (53 random bits), which advances one step.
#[inline]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn xoroshiro128p_uniform_f64<S>(states: &mut S, index: usize) -> f64
where
    S: IndexMut<usize, Output = Xoroshiro128pState> + ?Sized,
{
    unit_f64(states[index].next_u64())
}

/// A uniform `f32` from `states[index]`, which advances one step: the `f64` draw rounded to
/// `f32`, as Numba does, so that it is in `[0, 1]` (1 when the `f64` rounds up to it).
#[inline]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn xoroshiro128p_uniform_f32<S>(states: &mut S, index: usize) -> f32
where
    S: IndexMut<usize, Output = Xoroshiro128pState> + ?Sized,
{
    xoroshiro128p_uniform_f64(states, index) as f32
}

/// A standard normal `f32` (mean 0, deviation 1) from `states[index]`, which advances two
/// steps: `sqrt(-2 ln u1) cos(2π u2)` of two uniform `f32` draws, in `f32`.
#[inline]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn xoroshiro128p_normal_f32<S>(states: &mut S, index: usize) -> f32
where
    S: IndexMut<usize, Output = Xoroshiro128pState> + ?Sized,
{
    let u1 = xoroshiro128p_uniform_f32(states, index);
    let u2 = xoroshiro128p_uniform_f32(states, index);
    let two_pi = 2.0 * core::f32::consts::PI;
    DeviceFloat::sqrt(-2.0 * DeviceFloat::ln(u1)) * DeviceFloat::cos(two_pi * u2)
}

/// A standard normal `f64` from `states[index]`, which advances two steps. As Numba's, it
/// draws its two uniform numbers as `f32` and takes the logarithm of the first in `f32`; the
/// rest is `f64`.
#[inline]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn xoroshiro128p_normal_f64<S>(states: &mut S, index: usize) -> f64
where
    S: IndexMut<usize, Output = Xoroshiro128pState> + ?Sized,
{
    let u1 = xoroshiro128p_uniform_f32(states, index);
    let u2 = xoroshiro128p_uniform_f32(states, index);
    let two_pi = 2.0 * core::f64::consts::PI;
    DeviceFloat::sqrt(-2.0 * DeviceFloat::ln(u1) as f64) * DeviceFloat::cos(two_pi * u2 as f64)
}

/// The `n` states Numba's `init_xoroshiro128p_states` makes of `seed`: state 0 from the seed,
/// jumped `subsequence_start` times, each next one the one before jumped once.
///
/// `Error::TooLarge` or `Error::OutOfMemory` where the host cannot hold them.
#[cfg(not(target_arch = "nvptx64"))]
pub fn xoroshiro128p_states(
    n: usize,
    seed: u64,
    subsequence_start: u64,
) -> Result<Vec<Xoroshiro128pState>, crate::Error> {
    let mut states = Vec::new();
    let bytes = n.saturating_mul(core::mem::size_of::<Xoroshiro128pState>());
    if !crate::zeroed::host_can_hold(bytes) || states.try_reserve_exact(n).is_err() {
        return Err(
            match n.checked_mul(core::mem::size_of::<Xoroshiro128pState>()) {
                Some(bytes) if bytes <= isize::MAX as usize => crate::Error::OutOfMemory {
                    place: "the host".into(),
                    bytes,
                },
                _ => crate::Error::TooLarge { shape: vec![n] },
            },
        );
    }
    states.extend(StateStream::new(seed, subsequence_start).take(n));
    Ok(states)
}

/// The states of [`xoroshiro128p_states`], one after another.
#[cfg(not(target_arch = "nvptx64"))]
struct StateStream {
    next: Xoroshiro128pState,
}

#[cfg(not(target_arch = "nvptx64"))]
impl StateStream {
    fn new(seed: u64, subsequence_start: u64) -> Self {
        let mut next = Xoroshiro128pState::seeded(seed);
        next.jump_by(subsequence_start);
        StateStream { next }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl Iterator for StateStream {
    type Item = Xoroshiro128pState;

    fn next(&mut self) -> Option<Xoroshiro128pState> {
        let state = self.next;
        self.next.jump();
        Some(state)
    }
}

/// A new array of `n` generator states on `device`, as Numba's
/// `create_xoroshiro128p_states(n, seed, subsequence_start)`: see [`xoroshiro128p_states`].
/// The array is allocated first (an `n` the device cannot hold is its typed error), then the
/// states are made on the host a slice at a time (a jump is 128 steps, so a million states take
/// about a second) and copied.
#[cfg(not(target_arch = "nvptx64"))]
pub fn create_xoroshiro128p_states(
    device: &crate::Device,
    n: usize,
    seed: u64,
    subsequence_start: u64,
) -> Result<crate::DeviceArray1<Xoroshiro128pState>, crate::Error> {
    let mut states = device.empty::<Xoroshiro128pState, _>(n)?;
    init_xoroshiro128p_states(&mut states, seed, subsequence_start)?;
    Ok(states)
}

/// [`create_xoroshiro128p_states`] queued on `stream`, as Numba's
/// `create_xoroshiro128p_states(n, seed, subsequence_start, stream)`: the states are made on the
/// host into page-locked memory, and their copy to the device is queued on `stream`, after the
/// work queued there before, so that kernels on `stream` read them in order. The call returns
/// once the copy has been made (the page-locked memory is given back then).
///
/// ```
/// use kernel_runtime::prelude::*;
/// use kernel_runtime::random::create_xoroshiro128p_states_on;
/// let dev = Device::cpu();
/// let s = dev.stream()?;
/// let states = create_xoroshiro128p_states_on(&s, 100, 42, 0)?;
/// assert_eq!(states.to_vec()?, create_xoroshiro128p_states(&dev, 100, 42, 0)?.to_vec()?);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[cfg(not(target_arch = "nvptx64"))]
pub fn create_xoroshiro128p_states_on(
    stream: &crate::Stream,
    n: usize,
    seed: u64,
    subsequence_start: u64,
) -> Result<crate::DeviceArray1<Xoroshiro128pState>, crate::Error> {
    let device = stream.device();
    let mut states = device.empty::<Xoroshiro128pState, _>(n)?;
    let mut host = device.pinned::<Xoroshiro128pState, _>(n)?;
    for (slot, state) in host
        .iter_mut()
        .zip(StateStream::new(seed, subsequence_start))
    {
        *slot = state;
    }
    stream.upload(host.slice(..)?, &mut states)?;
    Ok(states)
}

/// Sets the states of `states` as [`create_xoroshiro128p_states`] makes them, as Numba's
/// `init_xoroshiro128p_states(states, seed, subsequence_start)`.
#[cfg(not(target_arch = "nvptx64"))]
pub fn init_xoroshiro128p_states(
    states: &mut crate::DeviceArray1<Xoroshiro128pState>,
    seed: u64,
    subsequence_start: u64,
) -> Result<(), crate::Error> {
    const SLICE: usize = 1 << 16;
    let mut stream = StateStream::new(seed, subsequence_start);
    let mut slice = Vec::with_capacity(SLICE.min(states.len()));
    let mut at = 0;
    while at < states.len() {
        slice.clear();
        slice.extend(stream.by_ref().take(SLICE.min(states.len() - at)));
        states.copy_from_host_at(at, &slice)?;
        at += slice.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jump_is_two_to_the_64_steps_of_the_same_sequence() {
        // Jumping then stepping equals stepping then jumping: the jump is a power of the step.
        let mut a = Xoroshiro128pState::seeded(7);
        let mut b = a;
        a.jump();
        a.next_u64();
        b.next_u64();
        b.jump();
        assert_eq!(a, b);
        assert_ne!(a, Xoroshiro128pState::seeded(7));
    }

    #[test]
    fn jumping_by_powers_is_jumping_one_at_a_time() {
        for times in [0u64, 1, 2, 3, 5, 64, 77] {
            let mut one_at_a_time = Xoroshiro128pState::seeded(times);
            for _ in 0..times {
                one_at_a_time.jump();
            }
            let mut at_once = Xoroshiro128pState::seeded(times);
            at_once.jump_by(times);
            assert_eq!(at_once, one_at_a_time, "{times}");
        }
        // 2^64 - 1 jumps, which a loop would not finish: then one more is 2^64 jumps, which
        // (the state's period is 2^128 - 1) brings the state back where 2^128 steps would.
        let mut far = Xoroshiro128pState::seeded(1);
        far.jump_by(u64::MAX);
        far.jump();
        let mut back = Xoroshiro128pState::seeded(1);
        back.next_u64();
        assert_eq!(far, back);
    }

    #[test]
    fn too_many_states_are_an_error() {
        assert!(matches!(
            xoroshiro128p_states(usize::MAX, 1, 0),
            Err(crate::Error::TooLarge { .. })
        ));
        assert!(matches!(
            xoroshiro128p_states(1 << 50, 1, 0),
            Err(crate::Error::OutOfMemory { .. })
        ));
    }

    #[test]
    fn uniform_draws_stay_in_the_unit_interval() {
        let mut states = xoroshiro128p_states(3, 99, 0).unwrap();
        for _ in 0..10_000 {
            let x = xoroshiro128p_uniform_f64(&mut states[..], 2);
            assert!((0.0..1.0).contains(&x));
            let y = xoroshiro128p_uniform_f32(&mut states[..], 1);
            assert!((0.0..=1.0).contains(&y));
        }
        assert_eq!(unit_f64(u64::MAX), 1.0 - f64::EPSILON / 2.0);
        // The f32 draw of the largest f64 below 1 is 1, as Numba's.
        assert_eq!(unit_f64(u64::MAX) as f32, 1.0);
    }
}
