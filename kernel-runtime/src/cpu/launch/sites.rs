//! Where the CPU backend keeps the shared arrays of `#[device]` functions in a block's shared
//! memory: an area past the kernel's own bytes with a place for every [`Site`] of the program
//! ([`SITES`], gathered by the linker, as the embedded PTX modules are), laid out once.
//!
//! The list is a link-time one because a launch sizes its blocks' memory before any call of a
//! device function, and must know every array one could ask for.

/// One `shared_array!` of a device function: its bytes and alignment.
#[derive(Debug)]
pub struct Site {
    pub(crate) bytes: usize,
    pub(crate) align: usize,
}

impl Site {
    /// The site of an array of `bytes` bytes aligned to `align` (a power of two).
    pub const fn new(bytes: usize, align: usize) -> Site {
        Site { bytes, align }
    }
}

/// Every device function's shared array in the program.
#[linkme::distributed_slice]
pub static SITES: [Site];

/// The places of the sites in a block's area, in the order of [`SITES`], and its bytes.
struct Area {
    offsets: Vec<usize>,
    bytes: usize,
}

/// The area, laid out once.
fn area() -> &'static Area {
    static AREA: std::sync::OnceLock<Area> = std::sync::OnceLock::new();
    AREA.get_or_init(|| {
        let mut bytes = 0usize;
        let offsets = SITES
            .iter()
            .map(|s| {
                let at = bytes.next_multiple_of(s.align);
                bytes = at.saturating_add(s.bytes);
                at
            })
            .collect();
        Area { offsets, bytes }
    })
}

/// Where the area starts in a block's shared memory for a launch of `shared_bytes`.
fn start(shared_bytes: usize) -> usize {
    shared_bytes.next_multiple_of(16)
}

/// The bytes of a block's shared memory for a launch of `shared_bytes`: the kernel's, then
/// (from a multiple of 16) the area.
pub(crate) fn block_bytes(shared_bytes: usize) -> usize {
    start(shared_bytes).saturating_add(area().bytes)
}

/// The offset of `site`'s array in the shared memory of a block of a launch of `shared_bytes`,
/// where `site` is one of [`SITES`].
pub(crate) fn offset(site: &'static Site, shared_bytes: usize) -> Option<usize> {
    let index = (site as *const Site as usize).wrapping_sub(SITES.as_ptr() as usize)
        / core::mem::size_of::<Site>();
    let at = area().offsets.get(index)?;
    Some(start(shared_bytes) + at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_area_starts_past_the_kernels_bytes_on_a_multiple_of_16() {
        assert_eq!(start(0), 0);
        assert_eq!(start(5), 16);
        assert!(block_bytes(5) >= 16);
        static STRANGER: Site = Site::new(4, 4);
        assert_eq!(offset(&STRANGER, 0), None);
    }
}
