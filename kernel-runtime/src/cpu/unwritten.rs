//! Checked mode's record of the elements of an array that nothing has written, from which it
//! reports a read of one, as CUDA's `compute-sanitizer --tool initcheck` does on a GPU.
//!
//! Only [`Device::empty`](crate::Device::empty) on a checked device starts one. Whatever writes
//! the array then clears what it writes: a copy its range; a checked kernel launch that takes
//! the array `&mut` the elements its threads wrote (its shadow records each write), and within
//! the launch a read of an element is reported unless a write of the launch came first; a
//! stencil's `apply` its interior, and its border too where it has a `cval`. Any other write (a
//! raw pointer's kernel, a launch on the fast backend, a host view) clears the whole array, so
//! that nothing written is ever reported.
//!
//! The record is one bit per element, kept only while some element is unwritten.

use std::ops::Range;

/// Where an array's unwritten elements come from, as checked mode's report names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// The array was made by [`Device::empty`](crate::Device::empty) and nothing has written
    /// the element since.
    Empty,
    /// The element is in the border that this stencil's `apply` left unwritten (it has no
    /// `cval`), in an array made by `empty`.
    Border(&'static str),
}

/// The unwritten elements of an array: none, or a [`Marks`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Unwritten(Option<Box<Marks>>);

/// One bit per element, set where nothing has written it, and where the unwritten elements
/// come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Marks {
    bits: Vec<u64>,
    /// How many bits are set: the marks are dropped when none is.
    set: usize,
    origin: Origin,
}

impl Marks {
    /// Whether element `i` is unwritten.
    #[inline(always)]
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.bits
            .get(i / 64)
            .is_some_and(|word| word >> (i % 64) & 1 == 1)
    }

    /// The first unwritten element below `len` (a record may be its array's while a view of
    /// the array's first `len` elements reads it).
    pub(crate) fn first_below(&self, len: usize) -> Option<usize> {
        let (w, word) = self.bits.iter().enumerate().find(|(_, w)| **w != 0)?;
        Some(w * 64 + word.trailing_zeros() as usize).filter(|&i| i < len)
    }

    /// Where the unwritten elements come from.
    pub(crate) fn origin(&self) -> Origin {
        self.origin
    }

    /// Clears the bits of `range`; says how many were set.
    fn clear(&mut self, range: Range<usize>) -> usize {
        let mut cleared = 0;
        let mut i = range.start;
        while i < range.end {
            let (word, bit) = (i / 64, i % 64);
            let n = (64 - bit).min(range.end - i);
            let mask = if n == 64 {
                !0
            } else {
                ((1u64 << n) - 1) << bit
            };
            cleared += (self.bits[word] & mask).count_ones() as usize;
            self.bits[word] &= !mask;
            i += n;
        }
        self.set -= cleared;
        cleared
    }
}

impl Unwritten {
    /// Every one of `len` elements unwritten, as `empty` leaves them in checked mode.
    pub(crate) fn all(len: usize) -> Unwritten {
        if len == 0 {
            return Unwritten(None);
        }
        let mut bits = vec![!0u64; len.div_ceil(64)];
        if !len.is_multiple_of(64) {
            bits[len / 64] = (1u64 << (len % 64)) - 1;
        }
        Unwritten(Some(Box::new(Marks {
            bits,
            set: len,
            origin: Origin::Empty,
        })))
    }

    /// The marks, where some element is unwritten.
    #[inline(always)]
    pub(crate) fn marks(&self) -> Option<&Marks> {
        self.0.as_deref()
    }

    /// Records a write of every element.
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        self.0 = None;
    }

    /// Records a write of the elements `range` (C order).
    pub(crate) fn clear_range(&mut self, range: Range<usize>) {
        if let Some(marks) = &mut self.0 {
            marks.clear(range);
            if marks.set == 0 {
                self.0 = None;
            }
        }
    }

    /// Records a write of each element below `len` that `written` says a launch wrote.
    pub(crate) fn clear_where(&mut self, len: usize, written: impl Fn(usize) -> bool) {
        self.clear_within(0..len, written);
    }

    /// Records a write of each element of `range` that `written` says was written.
    fn clear_within(&mut self, range: Range<usize>, written: impl Fn(usize) -> bool) {
        let Some(marks) = &mut self.0 else { return };
        let words = range.start / 64..marks.bits.len().min(range.end.div_ceil(64));
        for w in words {
            let mut word = marks.bits[w];
            while word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                if range.contains(&i) && written(i) {
                    marks.clear(i..i + 1);
                }
            }
        }
        if marks.set == 0 {
            self.0 = None;
        }
    }

    /// The record of the elements `range` alone, numbered from its start: what a checked
    /// launch on a view of them starts from.
    pub(crate) fn window(&self, range: Range<usize>) -> Unwritten {
        let Some(marks) = &self.0 else {
            return Unwritten(None);
        };
        let mut out = Unwritten::all(range.len());
        if let Some(new) = &mut out.0 {
            new.origin = marks.origin;
            for (j, i) in range.enumerate() {
                if !marks.contains(i) {
                    new.clear(j..j + 1);
                }
            }
            if new.set == 0 {
                out.0 = None;
            }
        }
        out
    }

    /// Records the writes to the elements from `start` on that `window`, the record
    /// [`window`](Self::window) gave of `len` of them, no longer holds unwritten.
    pub(crate) fn written_within(&mut self, start: usize, len: usize, window: &Unwritten) {
        let still = |i: usize| window.marks().is_some_and(|m| m.contains(i - start));
        self.clear_within(start..start + len, |i| !still(i));
    }

    /// Records a write of a stencil's interior, the runs of elements `interior`, by `stencil`:
    /// what is left unwritten is its border.
    pub(crate) fn keep_border(
        &mut self,
        interior: impl Iterator<Item = Range<usize>>,
        stencil: &'static str,
    ) {
        let Some(marks) = &mut self.0 else { return };
        let cleared: usize = interior.map(|run| marks.clear(run)).sum();
        if marks.set == 0 {
            self.0 = None;
        } else if cleared > 0 {
            marks.origin = Origin::Border(stencil);
        }
    }

    /// The record of the same bytes as `len` elements of `to` bytes each, these being of
    /// `from` bytes: an element is unwritten where any of its bytes is.
    pub(crate) fn reinterpret(&self, from: usize, to: usize, len: usize) -> Unwritten {
        let Some(marks) = &self.0 else {
            return Unwritten(None);
        };
        let mut out = Unwritten::all(len);
        let Some(new) = &mut out.0 else { return out };
        new.origin = marks.origin;
        for j in 0..len {
            let (first, last) = (j * to / from, ((j + 1) * to - 1) / from);
            if !(first..=last).any(|i| marks.contains(i)) {
                new.clear(j..j + 1);
            }
        }
        if new.set == 0 {
            out.0 = None;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unwritten(u: &Unwritten, len: usize) -> Vec<usize> {
        (0..len)
            .filter(|&i| u.marks().is_some_and(|m| m.contains(i)))
            .collect()
    }

    #[test]
    fn ranges_clear_until_nothing_is_left() {
        let mut u = Unwritten::all(130);
        assert_eq!(unwritten(&u, 140).len(), 130);
        u.clear_range(3..129);
        assert_eq!(unwritten(&u, 140), [0, 1, 2, 129]);
        u.clear_range(0..3);
        u.clear_range(129..130);
        assert!(u.marks().is_none());
        assert!(Unwritten::all(0).marks().is_none());
    }

    #[test]
    fn a_stencil_leaves_its_border() {
        let mut u = Unwritten::all(20);
        // Rows 1 and 2 of 4 × 5, columns 0..3.
        u.keep_border([5..8, 10..13].into_iter(), "s");
        // Rows 1 and 2, columns 0..3 are the interior.
        let border: Vec<usize> = (0..20)
            .filter(|&i| !(5..8).contains(&i) && !(10..13).contains(&i))
            .collect();
        assert_eq!(unwritten(&u, 20), border);
        assert_eq!(u.marks().map(Marks::origin), Some(Origin::Border("s")));
        // A stencil with no border writes it all.
        u.keep_border(std::iter::once(0..20), "t");
        assert!(u.marks().is_none());
    }

    #[test]
    fn what_a_launch_wrote_is_cleared() {
        let mut u = Unwritten::all(200);
        u.clear_where(200, |i| i % 3 != 0);
        let left: Vec<usize> = (0..200).filter(|i| i % 3 == 0).collect();
        assert_eq!(unwritten(&u, 200), left);
        u.clear_where(200, |_| true);
        assert!(u.marks().is_none());
    }

    #[test]
    fn a_window_is_taken_and_given_back() {
        let mut u = Unwritten::all(200);
        u.clear_range(70..75);
        let mut w = u.window(60..130);
        assert_eq!(
            unwritten(&w, 80),
            (0..70)
                .filter(|j| !(10..15).contains(j))
                .collect::<Vec<_>>()
        );
        // A launch on the window writes its elements 0..5 and 60..70.
        w.clear_range(0..5);
        w.clear_range(60..70);
        u.written_within(60, 70, &w);
        let left: Vec<usize> = (0..200)
            .filter(|i| !(60..65).contains(i) && !(70..75).contains(i) && !(120..130).contains(i))
            .collect();
        assert_eq!(unwritten(&u, 200), left);
        // A window with nothing left unwritten clears its whole range.
        u.written_within(0, 200, &Unwritten::default());
        assert!(u.marks().is_none());
        assert!(u.window(0..10).marks().is_none());
    }

    #[test]
    fn bytes_keep_their_marks_across_types() {
        let mut u = Unwritten::all(8);
        u.clear_range(0..5);
        // Bytes 5, 6 and 7 unwritten: of two words, the second.
        let words = u.reinterpret(1, 4, 2);
        assert_eq!(unwritten(&words, 2), [1]);
        let bytes = words.reinterpret(4, 1, 8);
        assert_eq!(unwritten(&bytes, 8), [4, 5, 6, 7]);
        assert_eq!(bytes.marks().map(Marks::origin), Some(Origin::Empty));
    }
}
