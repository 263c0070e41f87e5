//! What a split kernel keeps per thread of a block across its barriers.

/// Per-thread "has exited" flags of a split kernel's block.
pub fn flags(n: usize) -> Vec<bool> {
    vec![false; n]
}

/// Per-thread slots of a local that lives across a barrier in a split kernel.
///
/// A region saves the local for every thread that finishes it; later regions run only the
/// threads that have not exited, so every slot they read was saved. Values are never dropped
/// (kernel locals are plain device data).
pub struct Slots<T>(Vec<core::mem::MaybeUninit<T>>);

impl<T: Clone> Slots<T> {
    /// Slots for `n` threads, none saved yet.
    pub fn new(n: usize) -> Self {
        Slots((0..n).map(|_| core::mem::MaybeUninit::uninit()).collect())
    }

    /// Thread `t`'s saved value.
    ///
    /// # Safety
    /// `t` is below the thread count and thread `t` saved a value.
    #[inline(always)]
    pub unsafe fn get(&self, t: usize) -> T {
        debug_assert!(t < self.0.len());
        // SAFETY: per the contract.
        unsafe { self.0.get_unchecked(t).assume_init_ref().clone() }
    }

    /// Saves thread `t`'s value.
    ///
    /// # Safety
    /// `t` is below the thread count.
    #[inline(always)]
    pub unsafe fn set(&mut self, t: usize, value: T) {
        debug_assert!(t < self.0.len());
        // SAFETY: per the contract.
        unsafe { *self.0.get_unchecked_mut(t) = core::mem::MaybeUninit::new(value) }
    }
}
