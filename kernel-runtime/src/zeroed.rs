//! Zeroed vectors straight from the allocator, fallibly: fresh pages from the system are zero
//! already and cost memory only once touched, and an allocation the host cannot make is `None`,
//! never an abort. Used by host arrays (`zeros`, copies back from a GPU) and by checked mode's
//! shadows. The standard library has no stable fallible zeroed allocation of a `Vec` (nor of
//! `Box<[T]>`), hence this small piece by hand.
//!
//! A host that overcommits memory gives any allocation, even one past its memory and swap
//! together, and ends the process at the first touch of a page it cannot back:
//! [`host_can_hold`] refuses such a size up front, so that it stays an error.

use std::sync::OnceLock;

/// Whether the host could hold `bytes` at once: at most its memory and swap together (on Linux;
/// elsewhere the allocator alone decides).
pub(crate) fn host_can_hold(bytes: usize) -> bool {
    static ROOM: OnceLock<u128> = OnceLock::new();
    bytes as u128 <= *ROOM.get_or_init(host_room)
}

/// The host's memory and swap, in bytes.
#[cfg(target_os = "linux")]
fn host_room() -> u128 {
    // SAFETY: `sysinfo` fills the struct it is given; all-zero bytes are a value of it.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable `sysinfo`.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return u128::MAX;
    }
    (info.totalram as u128 + info.totalswap as u128) * info.mem_unit.max(1) as u128
}

/// The host's available and total memory, in bytes: `/proc/meminfo`'s `MemAvailable` and
/// `MemTotal` (on Linux; elsewhere unknown, `usize::MAX` both).
pub(crate) fn host_memory() -> (usize, usize) {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return (usize::MAX, usize::MAX);
    };
    let field = |name: &str| {
        let line = info.lines().find_map(|l| l.strip_prefix(name))?;
        let kib: usize = line.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib.saturating_mul(1024))
    };
    let total = field("MemTotal:").unwrap_or(usize::MAX);
    (field("MemAvailable:").unwrap_or(total).min(total), total)
}

/// The host's memory and swap, unknown here: the allocator alone decides.
#[cfg(not(target_os = "linux"))]
fn host_room() -> u128 {
    u128::MAX
}

/// `len` values of `T`, every byte zero; `None` where the allocator cannot give them.
///
/// # Safety
/// All-zero bytes must be a valid value of `T`.
pub(crate) unsafe fn zeroed_vec<T>(len: usize) -> Option<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(len).ok()?;
    if !host_can_hold(layout.size()) {
        return None;
    }
    if layout.size() == 0 {
        // SAFETY: no bytes at all (`len` is 0 or `T` has no size); zero is a value of `T` (the
        // caller's contract).
        return Some((0..len).map(|_| unsafe { std::mem::zeroed() }).collect());
    }
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the global allocator gave `ptr` with the layout of `len` values of `T`, as a `Vec`
    // of that capacity holds them, and all-zero bytes are a value of `T` (the caller's contract).
    Some(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

#[cfg(test)]
mod tests {
    #[test]
    fn zeroed_vectors_have_their_length_or_are_refused() {
        // SAFETY: zero is a value of these types.
        unsafe {
            assert_eq!(super::zeroed_vec::<u64>(5), Some(vec![0; 5]));
            assert_eq!(super::zeroed_vec::<u64>(0), Some(vec![]));
            assert_eq!(super::zeroed_vec::<()>(3).map(|v| v.len()), Some(3));
            assert_eq!(super::zeroed_vec::<u64>(usize::MAX / 4), None);
            assert_eq!(super::zeroed_vec::<u8>(usize::MAX / 2), None);
            // Past any host's memory, though an overcommitting allocator would give it.
            assert_eq!(super::zeroed_vec::<u8>(1 << 50), None);
        }
    }

    #[test]
    fn the_host_holds_a_little_and_not_a_petabyte() {
        assert!(super::host_can_hold(1 << 20));
        assert!(!super::host_can_hold(1 << 50));
    }
}
