//! A launch's arguments: a tuple of one [`KernelArg`] per parameter, for a kernel whose
//! parameters' types are the tuple `S` ([`Params`]), as cudarc's launch arguments are. The
//! launcher takes `impl KernelArgs<S>`, so wrong types or counts do not compile, and the borrow
//! checker refuses one array passed as both `&` and `&mut`; it hands the runtime the arguments
//! as the launch holds them ([`Args`]), one type per kernel, so that a kernel's launch is
//! compiled once, in its crate, whatever its callers pass.

use super::device::Device;
use super::error::Error;
use super::kernel::{KernelArg, Param};
use super::params::GpuParams;
use crate::cpu::check::LaunchShadows;
use crate::cpu::launch::shapes::ViewTypes;

/// The types of a kernel's parameters, as a tuple of [`Param`]s: what a launch holds of its
/// arguments, and how it passes them to a GPU and views them on the CPU backend.
pub trait Params: ViewTypes {
    /// What a launch holds of its arguments: one [`Param::Arg`] per parameter.
    type Args<'a>;

    /// The device a launch of `kernel` with `args` (named `names`) runs on: `explicit` where
    /// the configuration names one, else the first array's; every array must live there.
    fn device(
        args: &Self::Args<'_>,
        kernel: &'static str,
        names: &[&'static str],
        explicit: Option<&Device>,
    ) -> Result<Device, Error>;

    /// Appends pointers to every argument's PTX parameters, in order (see
    /// [`Param::push_gpu`]).
    fn push_gpu<'p>(args: &'p Self::Args<'_>, params: &mut GpuParams<'p>);

    /// The CPU backend's views of the arguments, named `names`.
    ///
    /// # Safety
    /// As [`Param::view`], for every argument.
    unsafe fn views<'v, const CHECK: bool>(
        args: &'v mut Self::Args<'_>,
        names: &[&'static str],
    ) -> Self::Views<'v, CHECK>;

    /// Checked mode's views of the arguments, named `names`, traced in `shadows`.
    ///
    /// # Safety
    /// As [`Param::traced_view`], for every argument.
    unsafe fn traced_views<'v, const CHECK: bool>(
        args: &'v mut Self::Args<'_>,
        names: &[&'static str],
        shadows: &mut LaunchShadows,
    ) -> Self::Views<'v, CHECK>;

    /// As [`Param::after_checked`], for every argument.
    fn after_checked(args: &mut Self::Args<'_>, shadows: &mut LaunchShadows);
}

/// The views a kernel of the parameters `S` takes, with index checks on or off.
pub type Views<'v, S, const CHECK: bool> = <S as ViewTypes>::Views<'v, CHECK>;

/// The arguments of a launch of a kernel whose parameters are `S`: a tuple with one argument
/// per parameter, each a [`KernelArg`] of it.
#[diagnostic::on_unimplemented(
    message = "these arguments do not match the kernel's parameters `{S}`",
    label = "one argument per parameter, in order",
    note = "pass a tuple of one argument per parameter (a kernel of one parameter takes that argument alone): `&x` for a `&[T]` parameter, `&mut x` for `&mut [T]`, where `x` is a device array (`dev.to_device(&host)?`), and a value for a scalar"
)]
pub trait KernelArgs<S: Params> {
    /// The arguments, as the launch holds them.
    fn args<'a>(self) -> S::Args<'a>
    where
        Self: 'a;
}

/// A tuple of one [`KernelArg`] per parameter of `S`: what [`KernelArgs`] is implemented for.
/// One trait apart, so that the compiler's message about arguments that do not match names
/// the argument, not the tuples of every length.
#[doc(hidden)]
pub trait ArgTuple<S: Params> {
    /// The arguments, as the launch holds them.
    fn tuple<'a>(self) -> S::Args<'a>
    where
        Self: 'a;
}

impl<S: Params, A: ArgTuple<S>> KernelArgs<S> for A {
    #[inline(always)]
    fn args<'a>(self) -> S::Args<'a>
    where
        Self: 'a,
    {
        self.tuple()
    }
}

/// A launch's arguments for the parameters `S`, as the launch holds them: what a kernel's
/// launch methods hand [`launch`](super::launcher::launch).
pub struct Args<'a, S: Params>(pub(crate) S::Args<'a>);

impl<'a, S: Params> Args<'a, S> {
    /// The arguments `args`.
    #[inline(always)]
    pub fn new<A: KernelArgs<S> + 'a>(args: A) -> Self {
        Args(args.args())
    }
}

/// The most parameters a kernel takes (the tuples' arity).
pub const MAX_PARAMS: usize = 16;

/// The name of argument `i`, for reports.
fn name(names: &[&'static str], i: usize) -> &'static str {
    names.get(i).copied().unwrap_or("?")
}

macro_rules! kernel_args {
    ($(($a:ident $p:ident $i:tt)),*) => {
        impl<$($p: Param),*> ViewTypes for ($($p,)*) {
            type Views<'v, const CHECK: bool> = ($($p::View<'v, CHECK>,)*);
        }

        impl<$($p: Param),*> Params for ($($p,)*) {
            type Args<'a> = ($($p::Arg<'a>,)*);

            fn device(
                args: &Self::Args<'_>,
                kernel: &'static str,
                names: &[&'static str],
                explicit: Option<&Device>,
            ) -> Result<Device, Error> {
                let arrays = [$((name(names, $i), $p::device(&args.$i))),*];
                pick_device(
                    kernel,
                    explicit,
                    &mut arrays.into_iter().filter_map(|(name, d)| Some((name, d?))),
                )
            }

            fn push_gpu<'p>(args: &'p Self::Args<'_>, params: &mut GpuParams<'p>) {
                $($p::push_gpu(&args.$i, params);)*
            }

            #[inline(always)]
            unsafe fn views<'v, const CHECK: bool>(
                args: &'v mut Self::Args<'_>,
                names: &[&'static str],
            ) -> Self::Views<'v, CHECK> {
                // SAFETY: the caller's contract, for each argument.
                unsafe { ($($p::view::<CHECK>(&mut args.$i, name(names, $i)),)*) }
            }

            #[inline(always)]
            fn after_checked(args: &mut Self::Args<'_>, shadows: &mut LaunchShadows) {
                $($p::after_checked(&mut args.$i, shadows);)*
            }

            #[inline(always)]
            unsafe fn traced_views<'v, const CHECK: bool>(
                args: &'v mut Self::Args<'_>,
                names: &[&'static str],
                shadows: &mut LaunchShadows,
            ) -> Self::Views<'v, CHECK> {
                // SAFETY: the caller's contract, for each argument.
                unsafe { ($($p::traced_view::<CHECK>(&mut args.$i, name(names, $i), shadows),)*) }
            }
        }

        impl<$($p: Param, $a: KernelArg<$p>),*> ArgTuple<($($p,)*)> for ($($a,)*) {
            #[inline(always)]
            fn tuple<'a>(self) -> ($($p::Arg<'a>,)*)
            where
                Self: 'a,
            {
                ($(self.$i.arg(),)*)
            }
        }
    };
}
crate::tuples::for_tuples!(kernel_args);

/// The device of a launch of `kernel`: `explicit`, else the first of `arrays` (the array
/// arguments' names and devices), else, for a kernel without arrays, [`Device::default`] (as
/// Numba launches one on the current device); every array must live there.
pub(crate) fn pick_device<'d>(
    kernel: &'static str,
    explicit: Option<&'d Device>,
    arrays: &mut dyn Iterator<Item = (&'static str, &'d Device)>,
) -> Result<Device, Error> {
    let mut device = explicit;
    for (argument, found) in arrays {
        match device {
            None => device = Some(found),
            Some(expected) if expected != found => {
                return Err(Error::DeviceMismatch {
                    kernel,
                    argument,
                    expected: expected.name(),
                    found: found.name(),
                })
            }
            Some(_) => {}
        }
    }
    Ok(device.cloned().unwrap_or_default())
}
