//! A launch's common shapes: where every array argument of a rank has one shape, the CPU
//! backend's fast runs give the kernel's views of that rank this one shape, a value the thread
//! loop holds once. An index the kernel checked against one array (`if i < c.len()`) is then
//! known valid for the others, so the optimiser drops their index checks and can vectorize the
//! loop. Launches whose arrays differ run the views as they are, in the one copy of the body
//! that a run's other paths (a row's ends, the replay of a fault) share.

/// What the views of a launch agree on, rank by rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shapes {
    d1: Option<[usize; 1]>,
    d2: Option<[usize; 2]>,
    d3: Option<[usize; 3]>,
    differ: bool,
}

/// The one shape of each rank's arrays in a launch whose arrays agree (a rank without arrays
/// holds zeros, which no view reads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Common {
    d1: [usize; 1],
    d2: [usize; 2],
    d3: [usize; 3],
}

impl Shapes {
    /// Notes an array of shape `dims` (of `N` axes): one whose shape differs from that of an
    /// array of its rank noted before makes the launch's arrays differ.
    #[inline]
    pub(crate) fn note<const N: usize>(&mut self, dims: [usize; N]) {
        let slot: &mut [usize] = match N {
            1 => self.d1.get_or_insert([dims[0]]),
            2 => self.d2.get_or_insert([dims[0], dims[1]]),
            3 => self.d3.get_or_insert([dims[0], dims[1], dims[2]]),
            _ => return,
        };
        self.differ |= slot != dims.as_slice();
    }

    /// The common shapes, unless some arrays of one rank differ.
    pub(crate) fn common(&self) -> Option<Common> {
        (!self.differ).then(|| Common {
            d1: self.d1.unwrap_or_default(),
            d2: self.d2.unwrap_or_default(),
            d3: self.d3.unwrap_or_default(),
        })
    }

    /// The length of the 1-D arrays, where there are some (a grid-level kernel's rows run up to
    /// it first).
    pub(crate) fn length(&self) -> Option<usize> {
        self.d1.map(|[n]| n)
    }
}

impl Common {
    /// The same shapes with the 1-D arrays' length `n` (a value the caller has shown equal).
    #[inline(always)]
    pub(crate) fn with_length(self, n: usize) -> Common {
        Common { d1: [n], ..self }
    }

    /// The shape of rank `N`.
    #[inline(always)]
    pub(crate) fn of<const N: usize>(&self) -> [usize; N] {
        let dims: &[usize] = match N {
            1 => &self.d1,
            2 => &self.d2,
            3 => &self.d3,
            _ => &[],
        };
        std::array::from_fn(|a| dims[a])
    }
}

/// Whether a run gives an array of `rank` the launch's common shape: with index checks, every
/// array (so that a check against one proves the others'); without, only a grid-level
/// kernel's 1-D arrays, whose length bounds the rows (`grid`).
#[inline(always)]
pub(crate) const fn shares(check: bool, grid: bool, rank: usize) -> bool {
    rank > 0 && (check || (grid && rank == 1))
}

/// One view of a kernel's body on the CPU backend, as the runs rebind it: an array's view, or
/// a value or pointer, which they pass as it is.
pub trait LaunchView: Copy + Send + Sync {
    /// Notes the view's shape in `shapes` where the run gives it the common shape (see
    /// [`shares`]; `grid`: a grid-level kernel's run).
    #[inline(always)]
    fn note(&self, _shapes: &mut Shapes, _grid: bool) {}

    /// The same view, its accesses not traced. The runs rebind each view with this inside
    /// the thread loop, so that the optimiser sees that no access is traced.
    #[inline(always)]
    fn untraced(self) -> Self {
        self
    }

    /// The same view, its accesses recorded as those of thread `thread` (linear index) of the
    /// block numbered `block` in checked mode, not of the running thread: checked mode's rows
    /// name each thread in the views instead of making it the running one.
    #[inline(always)]
    fn named(self, _block: u32, _thread: u32) -> Self {
        self
    }

    /// [`untraced`](Self::untraced), with the shape `common` gives its rank where the run gives
    /// it the common shape (see [`shares`]): views built from one such value share their
    /// extents, so the optimiser can prove an index checked against one array valid for the
    /// other.
    ///
    /// # Safety
    /// Where the view takes it, `common` must hold the view's own shape.
    #[inline(always)]
    unsafe fn fast<const GRID: bool>(self, _common: &Common) -> Self {
        self
    }

    /// Whether checked mode tests the view's reads against elements nothing has written,
    /// which [`fast`](Self::fast) would drop.
    #[inline(always)]
    fn tests_unwritten(&self) -> bool {
        false
    }
}

impl<T: crate::device_copy::DeviceCopy> LaunchView for T {}

/// A kernel's parameter types as the CPU backend views them: what its bodies take, with index
/// checks on or off. The launch's parameters ([`Params`](crate::host::args::Params)) name it.
pub trait ViewTypes {
    /// One view per parameter.
    type Views<'v, const CHECK: bool>: LaunchViews;
}

/// A kernel's views, one per parameter, as a tuple: what its bodies take.
pub trait LaunchViews: Copy + Send + Sync {
    /// What the views agree on (see [`LaunchView::note`]).
    fn shapes(&self, grid: bool) -> Shapes;

    /// Each view [`untraced`](LaunchView::untraced).
    fn untraced(self) -> Self;

    /// Each view [`named`](LaunchView::named).
    fn named(self, block: u32, thread: u32) -> Self;

    /// Each view rebound by [`LaunchView::fast`].
    ///
    /// # Safety
    /// As [`LaunchView::fast`], for every view.
    unsafe fn fast<const GRID: bool>(self, common: &Common) -> Self;

    /// Whether a view [`tests_unwritten`](LaunchView::tests_unwritten).
    fn tests_unwritten(&self) -> bool;
}

macro_rules! launch_views {
    ($(($v:ident $p:ident $i:tt)),*) => {
        impl<$($v: LaunchView),*> LaunchViews for ($($v,)*) {
            #[inline]
            fn shapes(&self, grid: bool) -> Shapes {
                let mut shapes = Shapes::default();
                $(self.$i.note(&mut shapes, grid);)*
                shapes
            }
            #[inline(always)]
            fn untraced(self) -> Self {
                ($(self.$i.untraced(),)*)
            }
            #[inline(always)]
            fn named(self, block: u32, thread: u32) -> Self {
                ($(self.$i.named(block, thread),)*)
            }
            #[inline(always)]
            unsafe fn fast<const GRID: bool>(self, common: &Common) -> Self {
                // SAFETY: the caller's contract, for each view.
                unsafe { ($(self.$i.fast::<GRID>(common),)*) }
            }
            #[inline]
            fn tests_unwritten(&self) -> bool {
                false $(|| self.$i.tests_unwritten())*
            }
        }
    };
}
crate::tuples::for_tuples!(launch_views);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_of_one_rank_agree_or_differ() {
        let mut s = Shapes::default();
        s.note([4usize]);
        s.note([3usize, 5]);
        s.note([4usize]);
        let common = s.common().expect("they agree");
        assert_eq!((common.of::<1>(), common.of::<2>()), ([4], [3, 5]));
        assert_eq!(s.length(), Some(4));
        assert_eq!(common.with_length(9).of::<1>(), [9]);
        s.note([3usize, 6]);
        assert_eq!(s.common(), None);
    }

    #[test]
    fn runs_share_shapes_by_checks_and_rows() {
        assert!(shares(true, false, 2) && shares(true, true, 3));
        assert!(shares(false, true, 1) && !shares(false, true, 2));
        assert!(!shares(false, false, 1) && !shares(true, true, 0));
    }
}
