//! Launch configurations: `(blocks, threads)` with one to three dimensions each, optional
//! dynamic shared memory, checked against the device's limits.

use super::cuda::Launch;
use super::device::Device;
use super::error::{Error, LaunchError};
use super::limits::Limits;
use super::stream::Stream;
use crate::dim::Dim3;

/// Something that can be a grid or block shape: an integer, or a tuple of two or three.
pub trait IntoDim3 {
    /// The shape, or why it is not one.
    fn into_dim3(self) -> Result<Dim3, LaunchError>;
}

/// One component of a shape: any primitive integer, checked to fit in `u32`.
pub trait DimComponent: Copy {
    /// The component as `u32`, or why not.
    fn component(self) -> Result<u32, LaunchError>;
}

macro_rules! dim_component {
    ($($t:ty),*) => {$(
        impl DimComponent for $t {
            #[inline]
            fn component(self) -> Result<u32, LaunchError> {
                u32::try_from(self).map_err(|_| LaunchError::DimOutOfRange {
                    what: "",
                    axis: 'x',
                    value: self as i128,
                })
            }
        }
    )*};
}
dim_component!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl<A: DimComponent> IntoDim3 for A {
    fn into_dim3(self) -> Result<Dim3, LaunchError> {
        Ok(Dim3::new(self.component()?, 1, 1))
    }
}
/// `c`'s error, named as the component along `axis`.
fn along<A: DimComponent>(c: A, axis: char) -> Result<u32, LaunchError> {
    c.component().map_err(|e| match e {
        LaunchError::DimOutOfRange { what, value, .. } => {
            LaunchError::DimOutOfRange { what, axis, value }
        }
        other => other,
    })
}
impl<A: DimComponent, B: DimComponent> IntoDim3 for (A, B) {
    fn into_dim3(self) -> Result<Dim3, LaunchError> {
        Ok(Dim3::new(along(self.0, 'x')?, along(self.1, 'y')?, 1))
    }
}
impl<A: DimComponent, B: DimComponent, C: DimComponent> IntoDim3 for (A, B, C) {
    fn into_dim3(self) -> Result<Dim3, LaunchError> {
        Ok(Dim3::new(
            along(self.0, 'x')?,
            along(self.1, 'y')?,
            along(self.2, 'z')?,
        ))
    }
}

/// `shape` as the launch's `what` (`grid` or `block`), its errors naming it.
fn launch_dim(shape: impl IntoDim3, what: &'static str) -> Result<Dim3, LaunchError> {
    shape.into_dim3().map_err(|e| match e {
        LaunchError::DimOutOfRange { axis, value, .. } => {
            LaunchError::DimOutOfRange { what, axis, value }
        }
        other => other,
    })
}
impl IntoDim3 for Dim3 {
    fn into_dim3(self) -> Result<Dim3, LaunchError> {
        Ok(self)
    }
}

/// How to launch a kernel: blocks of the grid, threads of a block, dynamic shared memory, and
/// optionally the device (else the device of the kernel's array arguments).
///
/// ```
/// use kernel_runtime::LaunchConfig;
/// let cfg = LaunchConfig::cover(1000, 256)?;           // 4 blocks of 256 threads
/// assert_eq!((cfg.grid.x, cfg.block.x), (4, 256));
/// let cfg = LaunchConfig::cover_2d((100, 30), (16, 16))?;
/// assert_eq!((cfg.grid.x, cfg.grid.y), (7, 2));
/// let cfg = LaunchConfig::new((8, 8), (16, 16))?.shared_bytes(4096);
/// assert_eq!(cfg.dynamic_shared_bytes, 4096);
/// # Ok::<(), kernel_runtime::LaunchError>(())
/// ```
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    /// Blocks of the grid.
    pub grid: Dim3,
    /// Threads of each block.
    pub block: Dim3,
    /// Dynamic shared memory bytes per block (beyond the kernel's static shared arrays).
    pub dynamic_shared_bytes: usize,
    /// The device to run on; `None` takes the device of the array arguments.
    pub device: Option<Device>,
    /// The stream to queue the launch on; `None` is the device's own.
    pub stream: Option<Stream>,
}

impl LaunchConfig {
    /// `blocks` blocks of `threads` threads, like Numba's `kernel[blocks, threads]`.
    pub fn new(blocks: impl IntoDim3, threads: impl IntoDim3) -> Result<Self, LaunchError> {
        Ok(LaunchConfig {
            grid: launch_dim(blocks, "grid")?,
            block: launch_dim(threads, "block")?,
            dynamic_shared_bytes: 0,
            device: None,
            stream: None,
        })
    }

    /// Enough blocks of `threads` threads for one thread per element of `n`.
    pub fn cover(n: usize, threads: u32) -> Result<Self, LaunchError> {
        let threads = threads.max(1);
        let blocks = n.div_ceil(threads as usize).max(1);
        Self::new(blocks, threads)
    }

    /// Enough 2-D blocks of `threads` for one thread per element of an `(n, m)` grid: x covers
    /// `n`, y covers `m` (as `grid(2)` returns them).
    pub fn cover_2d((n, m): (usize, usize), threads: (u32, u32)) -> Result<Self, LaunchError> {
        let (tx, ty) = (threads.0.max(1), threads.1.max(1));
        Self::new(
            (
                n.div_ceil(tx as usize).max(1),
                m.div_ceil(ty as usize).max(1),
            ),
            (tx, ty),
        )
    }

    /// The same launch with `bytes` of dynamic shared memory per block.
    pub fn shared_bytes(mut self, bytes: usize) -> Self {
        self.dynamic_shared_bytes = bytes;
        self
    }

    /// The same launch on `device`.
    pub fn on(mut self, device: &Device) -> Self {
        self.device = Some(device.clone());
        self
    }

    /// The same launch queued on `stream`, on the stream's device.
    pub fn on_stream(mut self, stream: &Stream) -> Self {
        self.device = Some(stream.device().clone());
        self.stream = Some(stream.clone());
        self
    }

    /// The shared memory each block gets for a kernel with `static_shared` bytes of static
    /// shared arrays: those, aligned to 16 bytes, then the dynamic bytes.
    pub fn block_shared_bytes(&self, static_shared: usize) -> usize {
        crate::shared::align_up(static_shared, 16).saturating_add(self.dynamic_shared_bytes)
    }

    /// Runs `op`, which queues the launch, in order with the work of the stream's other library
    /// where it has one ([`Stream::queue`]).
    pub(crate) fn queue<R>(&self, op: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
        Stream::queue_on(self.stream.as_ref(), op)
    }

    /// What the launch asks of a GPU, for a kernel with `static_shared` bytes of static shared
    /// arrays.
    pub(crate) fn on_gpu(&self, static_shared: usize, cooperative: bool) -> Launch<'_> {
        Launch {
            grid: self.grid,
            block: self.block,
            shared_bytes: self.block_shared_bytes(static_shared),
            stream: self.stream.as_ref().and_then(|s| s.cuda()),
            cooperative,
        }
    }

    /// Checks the configuration against `limits` for a kernel with `static_shared` bytes of
    /// static shared arrays.
    pub fn validate(&self, limits: &Limits, static_shared: usize) -> Result<(), LaunchError> {
        for (what, d, max) in [
            ("grid", self.grid, limits.max_grid),
            ("block", self.block, limits.max_block),
        ] {
            if d.x == 0 || d.y == 0 || d.z == 0 {
                return Err(LaunchError::ZeroDim { what, dims: d });
            }
            for (axis, value, limit) in [('x', d.x, max.x), ('y', d.y, max.y), ('z', d.z, max.z)] {
                if value > limit {
                    return Err(LaunchError::DimTooLarge {
                        what,
                        axis,
                        value,
                        limit,
                    });
                }
            }
        }
        let threads = self.block.volume();
        if threads > limits.max_threads_per_block as u64 {
            return Err(LaunchError::TooManyThreads {
                dims: self.block,
                threads,
                limit: limits.max_threads_per_block as u64,
            });
        }
        let bytes = self.block_shared_bytes(static_shared);
        if bytes > limits.shared_bytes_limit() {
            return Err(LaunchError::TooMuchSharedMemory {
                bytes,
                static_bytes: static_shared,
                dynamic_bytes: self.dynamic_shared_bytes,
                limit: limits.shared_bytes_limit(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        cfg: Result<LaunchConfig, LaunchError>,
        static_shared: usize,
    ) -> Result<(), LaunchError> {
        cfg?.validate(&Limits::CUDA_DEFAULT, static_shared)
    }

    #[test]
    fn shapes_cover_their_elements() {
        // Blocks that are not square: x is divided by the block's x, y by its y.
        let cfg = LaunchConfig::cover_2d((100, 30), (32, 4)).unwrap();
        assert_eq!(
            (cfg.grid, cfg.block),
            (Dim3::new(4, 8, 1), Dim3::new(32, 4, 1))
        );
        let cfg = LaunchConfig::cover_2d((7, 300), (1, 128)).unwrap();
        assert_eq!(cfg.grid, Dim3::new(7, 3, 1));
        // No threads asked for: one a block, as many blocks as elements; nothing to cover:
        // one block.
        let cfg = LaunchConfig::cover(10, 0).unwrap();
        assert_eq!(
            (cfg.grid, cfg.block),
            (Dim3::new(10, 1, 1), Dim3::new(1, 1, 1))
        );
        let cfg = LaunchConfig::cover(0, 64).unwrap();
        assert_eq!(
            (cfg.grid, cfg.block),
            (Dim3::new(1, 1, 1), Dim3::new(64, 1, 1))
        );
        let cfg = LaunchConfig::cover(1000, 256).unwrap();
        assert_eq!(cfg.grid, Dim3::new(4, 1, 1));
    }

    #[test]
    fn three_dimensional_shapes_pass_as_they_are() {
        let cfg = LaunchConfig::new(Dim3::new(2, 3, 4), Dim3::new(8, 4, 2)).unwrap();
        assert_eq!(
            (cfg.grid, cfg.block),
            (Dim3::new(2, 3, 4), Dim3::new(8, 4, 2))
        );
        let cfg = LaunchConfig::new((5u8, 6i32, 7usize), (1u16, 2u64, 3i64)).unwrap();
        assert_eq!(
            (cfg.grid, cfg.block),
            (Dim3::new(5, 6, 7), Dim3::new(1, 2, 3))
        );
    }

    #[test]
    fn dynamic_shared_memory_starts_16_bytes_aligned_after_the_static_arrays() {
        let cfg = LaunchConfig::new(1, 32).unwrap().shared_bytes(64);
        // 3 bytes of static `u8`s take 16, then the 64 dynamic ones.
        assert_eq!(cfg.block_shared_bytes(3), 80);
        assert_eq!(cfg.block_shared_bytes(0), 64);
        assert_eq!(cfg.block_shared_bytes(16), 80);
        assert_eq!(cfg.block_shared_bytes(17), 96);
        assert_eq!(LaunchConfig::new(1, 1).unwrap().block_shared_bytes(5), 16);
    }

    #[test]
    fn accepts_usual_shapes() {
        assert!(check(LaunchConfig::new(1, 1), 0).is_ok());
        assert!(check(LaunchConfig::new((65535, 65535), (32, 32)), 48 * 1024).is_ok());
        assert!(check(LaunchConfig::new(2_147_483_647u32, 1024), 0).is_ok());
    }

    #[test]
    fn rejects_bad_shapes_with_the_reason() {
        assert!(matches!(
            check(LaunchConfig::new(0, 32), 0),
            Err(LaunchError::ZeroDim { what: "grid", .. })
        ));
        assert!(matches!(
            check(LaunchConfig::new(1, (32, 0)), 0),
            Err(LaunchError::ZeroDim { what: "block", .. })
        ));
        assert!(matches!(
            check(LaunchConfig::new(1, (41, 25)), 0),
            Err(LaunchError::TooManyThreads { threads: 1025, .. })
        ));
        assert!(matches!(
            check(LaunchConfig::new(1, (64, 32)), 0),
            Err(LaunchError::TooManyThreads { .. })
        ));
        assert!(matches!(
            check(LaunchConfig::new(1, (1, 1, 65)), 0),
            Err(LaunchError::DimTooLarge { axis: 'z', .. })
        ));
        assert!(matches!(
            check(LaunchConfig::new((1, 65536), 1), 0),
            Err(LaunchError::DimTooLarge {
                what: "grid",
                axis: 'y',
                ..
            })
        ));
        assert!(matches!(
            LaunchConfig::new(-1, 1),
            Err(LaunchError::DimOutOfRange {
                what: "grid",
                axis: 'x',
                value: -1
            })
        ));
        let e = LaunchConfig::new(1, (32, -4)).unwrap_err();
        assert!(
            matches!(
                e,
                LaunchError::DimOutOfRange {
                    what: "block",
                    axis: 'y',
                    value: -4
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "block dimension y is -4, out of range (0 < n < 2^32)"
        );
        assert!(matches!(
            LaunchConfig::new(1usize << 40, 1),
            Err(LaunchError::DimOutOfRange { .. })
        ));
        let cfg = LaunchConfig::new(1, 1).map(|c| c.shared_bytes(48 * 1024));
        assert!(matches!(
            check(cfg, 16),
            Err(LaunchError::TooMuchSharedMemory { .. })
        ));
    }

    #[test]
    fn cover_rounds_up() {
        let c = LaunchConfig::cover(257, 256).unwrap();
        assert_eq!((c.grid.x, c.block.x), (2, 256));
        let c = LaunchConfig::cover(0, 256).unwrap();
        assert_eq!(c.grid.x, 1);
    }
}
