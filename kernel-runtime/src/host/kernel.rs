//! One kernel parameter: what a launch may pass for it, and how the argument is checked, passed
//! to a GPU and seen by the CPU backend.
//!
//! A parameter's declared type, as the launcher's signature names it, is a [`Param`]:
//! `&'static [T]` and `&'static ArrayN<T>` are read-only views, `&'static mut [T]` and
//! `&'static mut ArrayN<T>` writable ones, a [`DeviceCopy`] type its value, `*const T` and
//! `*mut T` a pointer. It says what a launch holds of the argument ([`Param::Arg`]: a view of a
//! device array, the value, a [`DevicePtr`]) and what the body sees of it. What a caller may
//! pass for it is a [`KernelArg`] of it, as cudarc's `PushKernelArg`: `&DeviceArray` or a
//! [`DeviceView`] for `&` (or a writable array or view, which the launch reads),
//! `&mut DeviceArray` or a [`DeviceViewMut`] for `&mut`, the value itself, a `DevicePtr`.

use super::array::DeviceArray;
use super::device::Device;
use super::device_view::{DeviceView, DeviceViewMut};
use super::order::Access;
use super::params::GpuParams;
use super::ptr::{DevicePtr, SyncPtr};
use super::shape::fixed_dims;
use crate::cpu::check::LaunchShadows;
use crate::cpu::launch::shapes::LaunchView;
use crate::device_copy::DeviceCopy;
use crate::view::{View0, View0Mut, View1, View1Mut, View2, View2Mut, View3, View3Mut};
use ndarray::{Array0, Array2, Array3, Dimension, Ix0, Ix1, Ix2, Ix3};
use std::borrow::Cow;

/// The type a kernel parameter is declared with, as the launcher's signature names it
/// (`&'static [f32]`, `&'static mut Array2<f32>`, `u32`, `*mut f32`): what a launch holds of
/// its argument, and how it passes it to a GPU and views it on the CPU backend.
pub trait Param {
    /// What a launch holds of the argument, for `'a`: `&'a DeviceArray<T, D>`, `&'a mut
    /// DeviceArray<T, D>`, the value, a `DevicePtr<T>`.
    type Arg<'a>;

    /// What the body sees on the CPU backend, with index checks on or off (`CHECK`), for the
    /// launch `'v`.
    type View<'v, const CHECK: bool>: LaunchView;

    /// The device the argument's memory lives on; none for a value.
    fn device<'r>(arg: &'r Self::Arg<'_>) -> Option<&'r Device>;

    /// Appends pointers to the argument's PTX parameters, in order: an array's device address
    /// and then its extents, a value itself. They point into `arg`. An array also records how
    /// the launch uses it.
    fn push_gpu<'p>(arg: &'p Self::Arg<'_>, params: &mut GpuParams<'p>);

    /// The CPU backend's view, named `name` in fault reports, its accesses not traced.
    ///
    /// # Safety
    /// The argument's memory must be the host's (the launch runs on the CPU backend: a GPU's
    /// array has no host elements to view), and with `CHECK` false every index the body takes
    /// must be within the array (the kernel's `boundscheck = false` promise).
    unsafe fn view<'v, const CHECK: bool>(
        arg: &'v mut Self::Arg<'_>,
        name: &'static str,
    ) -> Self::View<'v, CHECK>;

    /// Checked mode's view, its accesses traced in `shadows`.
    ///
    /// # Safety
    /// As for [`view`](Self::view); and the view must not be used after `shadows` is dropped.
    unsafe fn traced_view<'v, const CHECK: bool>(
        arg: &'v mut Self::Arg<'_>,
        name: &'static str,
        shadows: &mut LaunchShadows,
    ) -> Self::View<'v, CHECK>;

    /// Once a checked launch has run: a writable array takes back from `shadows` what of it
    /// nothing has written.
    #[inline(always)]
    fn after_checked(_arg: &mut Self::Arg<'_>, _shadows: &mut LaunchShadows) {}
}

/// What may be passed for a kernel parameter declared `P`: something the launch can hold as
/// `P`'s argument.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter of type `{P}`",
    label = "not a kernel argument for `{P}`",
    note = "an array parameter takes a device array of its element type and rank: copy host data to the device first (`let x = dev.to_device(&x)?;`), then pass `&x`, or `&mut x` for a `&mut` parameter; or rows of one, `x.slice(i..j)?` or `x.slice_mut(i..j)?`",
    note = "a scalar or struct parameter takes a value of its own type; a raw pointer parameter, a `DevicePtr`"
)]
pub trait KernelArg<P: Param> {
    /// The argument, as the launch holds it.
    fn arg<'a>(self) -> P::Arg<'a>
    where
        Self: 'a;
}

/// A scalar or struct parameter: the value itself, checked to be [`DeviceCopy`] where the
/// kernel is defined (one error there, not one per use); a GPU launch reads it through a
/// pointer to it, in place.
impl<T: DeviceCopy> Param for T {
    type Arg<'a> = T;
    type View<'v, const CHECK: bool> = T;

    #[inline(always)]
    fn device(_arg: &T) -> Option<&Device> {
        None
    }

    fn push_gpu<'p>(arg: &'p T, params: &mut GpuParams<'p>) {
        params.push(arg);
    }

    #[inline(always)]
    unsafe fn view<const CHECK: bool>(arg: &mut T, _name: &'static str) -> T {
        *arg
    }

    #[inline(always)]
    unsafe fn traced_view<const CHECK: bool>(
        arg: &mut T,
        _name: &'static str,
        _shadows: &mut LaunchShadows,
    ) -> T {
        *arg
    }
}

#[diagnostic::do_not_recommend]
impl<T: DeviceCopy> KernelArg<T> for T {
    #[inline(always)]
    fn arg<'a>(self) -> T
    where
        Self: 'a,
    {
        self
    }
}

/// A struct parameter (`p: Params`): the value, which the body sees as itself (its binding
/// unwraps it). Its type is checked to be [`DeviceCopy`] where the kernel is defined, and only
/// there: the launcher's signature names it without that bound, so that a struct that is not
/// plain device data is one error, at its type.
#[derive(Clone, Copy, Debug)]
pub struct ByValue<T>(pub T);

impl<T: Copy + Send + Sync + 'static> Param for ByValue<T> {
    type Arg<'a> = T;
    type View<'v, const CHECK: bool> = ByValue<T>;

    #[inline(always)]
    fn device(_arg: &T) -> Option<&Device> {
        None
    }

    fn push_gpu<'p>(arg: &'p T, params: &mut GpuParams<'p>) {
        params.push(arg);
    }

    #[inline(always)]
    unsafe fn view<const CHECK: bool>(arg: &mut T, _name: &'static str) -> ByValue<T> {
        ByValue(*arg)
    }

    #[inline(always)]
    unsafe fn traced_view<const CHECK: bool>(
        arg: &mut T,
        _name: &'static str,
        _shadows: &mut LaunchShadows,
    ) -> ByValue<T> {
        ByValue(*arg)
    }
}

#[diagnostic::do_not_recommend]
impl<T: Copy + Send + Sync + 'static> KernelArg<ByValue<T>> for T {
    #[inline(always)]
    fn arg<'a>(self) -> T
    where
        Self: 'a,
    {
        self
    }
}

impl<T: Copy + Send + Sync> LaunchView for ByValue<T> {}

/// A raw pointer parameter of an `unsafe` kernel, read-only or writable: an address in the
/// launch's device, a `DevicePtr`.
macro_rules! pointer_param {
    ($($ptr:tt)+) => {
        impl<T: 'static> Param for $($ptr)+ T {
            type Arg<'a> = DevicePtr<T>;
            type View<'v, const CHECK: bool> = SyncPtr<T>;

            #[inline(always)]
            fn device(arg: &DevicePtr<T>) -> Option<&Device> {
                Some(arg.device())
            }

            fn push_gpu<'p>(arg: &'p DevicePtr<T>, params: &mut GpuParams<'p>) {
                params.push(arg.addr_ref());
            }

            #[inline(always)]
            unsafe fn view<const CHECK: bool>(
                arg: &mut DevicePtr<T>,
                _name: &'static str,
            ) -> SyncPtr<T> {
                SyncPtr::of(arg)
            }

            #[inline(always)]
            unsafe fn traced_view<const CHECK: bool>(
                arg: &mut DevicePtr<T>,
                _name: &'static str,
                _shadows: &mut LaunchShadows,
            ) -> SyncPtr<T> {
                SyncPtr::of(arg)
            }
        }

        #[diagnostic::do_not_recommend]
        impl<T: 'static> KernelArg<$($ptr)+ T> for DevicePtr<T> {
            #[inline(always)]
            fn arg<'a>(self) -> DevicePtr<T>
            where
                Self: 'a,
            {
                self
            }
        }
    };
}
pointer_param!(*const);
pointer_param!(*mut);

/// The array parameter `$param` of rank `$rank`, viewed as `$view`, whose argument is a view
/// of a device array, read-only (`$arg` a [`DeviceView`]) or writable (a [`DeviceViewMut`],
/// with `mut`): a whole array's (`&x`, `&mut x`) or part of one (`x.slice(1..)?`).
macro_rules! array_param {
    ($param:ty, $ix:ty, $rank:literal, $view:ident, $arg:ident $(, $mut:tt)?) => {
        impl<T: DeviceCopy> Param for $param {
            type Arg<'a> = $arg<'a, T, $ix>;
            type View<'v, const CHECK: bool> = $view<'v, T, CHECK>;

            #[inline(always)]
            fn device<'r>(arg: &'r Self::Arg<'_>) -> Option<&'r Device> {
                Some(arg.device)
            }

            fn push_gpu<'p>(arg: &'p Self::Arg<'_>, params: &mut GpuParams<'p>) {
                params.push(&arg.addr);
                arg.dim.slice().iter().for_each(|d| params.push(d));
                params.uses(arg.span(), array_param!(@access $($mut)?));
            }

            #[inline(always)]
            unsafe fn view<'v, const CHECK: bool>(
                arg: &'v mut Self::Arg<'_>,
                name: &'static str,
            ) -> $view<'v, T, CHECK> {
                $(array_param!(@forget arg, $mut);)?
                let ptr = array_param!(@ptr arg $(, $mut)?);
                // SAFETY: the memory is the host's (the caller's contract), so the view covers
                // the argument's elements; it lives no longer than the borrow of the argument.
                unsafe { $view::from_raw(ptr, fixed_dims::<_, $rank>(&arg.dim), name) }
            }

            #[inline(always)]
            unsafe fn traced_view<'v, const CHECK: bool>(
                arg: &'v mut Self::Arg<'_>,
                name: &'static str,
                shadows: &mut LaunchShadows,
            ) -> $view<'v, T, CHECK> {
                let trace = array_param!(@trace shadows, name, arg $(, $mut)?);
                let ptr = array_param!(@ptr arg $(, $mut)?);
                // SAFETY: as in `view`; the caller keeps `shadows`, which the trace points into,
                // for as long as the view.
                unsafe { $view::from_raw(ptr, fixed_dims::<_, $rank>(&arg.dim), name).traced(trace) }
            }

            $(
                #[inline(always)]
                fn after_checked(arg: &mut Self::Arg<'_>, shadows: &mut LaunchShadows) {
                    array_param!(@written arg, shadows, $mut)
                }
            )?
        }

        #[diagnostic::do_not_recommend]
        impl<'b, T: DeviceCopy> KernelArg<$param> for &'b $($mut)? DeviceArray<T, $ix> {
            #[inline(always)]
            fn arg<'a>(self) -> $arg<'a, T, $ix>
            where
                Self: 'a,
            {
                array_param!(@whole self $(, $mut)?)
            }
        }

        #[diagnostic::do_not_recommend]
        impl<'b, T: DeviceCopy> KernelArg<$param> for $arg<'b, T, $ix> {
            #[inline(always)]
            fn arg<'a>(self) -> $arg<'a, T, $ix>
            where
                Self: 'a,
            {
                self
            }
        }

        #[diagnostic::do_not_recommend]
        impl<'b, 'c, T: DeviceCopy> KernelArg<$param> for &'c $($mut)? $arg<'b, T, $ix> {
            #[inline(always)]
            fn arg<'a>(self) -> $arg<'a, T, $ix>
            where
                Self: 'a,
            {
                array_param!(@again self $(, $mut)?)
            }
        }
    };
    (@trace $shadows:ident, $name:ident, $arg:ident, mut) => {
        $shadows.writable($name, $arg.dim.slice(), $arg.unwritten_window())
    };
    (@trace $shadows:ident, $name:ident, $arg:ident) => {
        match $arg.unwritten_record() {
            Cow::Borrowed(unwritten) => $shadows.read_only(unwritten),
            Cow::Owned(window) => $shadows.read_only_window(window),
        }
    };
    (@written $arg:ident, $shadows:ident, mut) => {
        $arg.written(&$shadows.written())
    };
    (@forget $arg:ident, mut) => {
        $arg.forget_unwritten()
    };
    (@access mut) => {
        Access::Write
    };
    (@access) => {
        Access::Read
    };
    (@ptr $arg:ident, mut) => {
        $arg.host.as_mut_ptr()
    };
    (@ptr $arg:ident) => {
        $arg.host.as_ptr().cast_mut()
    };
    (@whole $array:ident, mut) => {
        $array.view_mut()
    };
    (@whole $array:ident) => {
        $array.view()
    };
    (@again $view:ident, mut) => {
        $view.reborrow()
    };
    (@again $view:ident) => {
        $view.clone()
    };
}

array_param!(&'static Array0<T>, Ix0, 0, View0, DeviceView);
array_param!(&'static [T], Ix1, 1, View1, DeviceView);
array_param!(&'static Array2<T>, Ix2, 2, View2, DeviceView);
array_param!(&'static Array3<T>, Ix3, 3, View3, DeviceView);
array_param!(&'static mut Array0<T>, Ix0, 0, View0Mut, DeviceViewMut, mut);
array_param!(&'static mut [T], Ix1, 1, View1Mut, DeviceViewMut, mut);
array_param!(&'static mut Array2<T>, Ix2, 2, View2Mut, DeviceViewMut, mut);
array_param!(&'static mut Array3<T>, Ix3, 3, View3Mut, DeviceViewMut, mut);

/// A writable array or view passed for a read-only parameter: the launch reads it.
macro_rules! read_through_mut {
    ($param:ty, $ix:ty) => {
        #[diagnostic::do_not_recommend]
        impl<'b, T: DeviceCopy> KernelArg<$param> for &'b mut DeviceArray<T, $ix> {
            #[inline(always)]
            fn arg<'a>(self) -> DeviceView<'a, T, $ix>
            where
                Self: 'a,
            {
                self.view()
            }
        }

        read_through_mut!(@view $param, $ix, &'c DeviceViewMut<'b, T, $ix>);
        read_through_mut!(@view $param, $ix, &'c mut DeviceViewMut<'b, T, $ix>);
    };
    (@view $param:ty, $ix:ty, $view:ty) => {
        #[diagnostic::do_not_recommend]
        impl<'b, 'c, T: DeviceCopy> KernelArg<$param> for $view {
            #[inline(always)]
            fn arg<'a>(self) -> DeviceView<'a, T, $ix>
            where
                Self: 'a,
            {
                self.view()
            }
        }
    };
}
read_through_mut!(&'static Array0<T>, Ix0);
read_through_mut!(&'static [T], Ix1);
read_through_mut!(&'static Array2<T>, Ix2);
read_through_mut!(&'static Array3<T>, Ix3);
