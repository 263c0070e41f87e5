//! Helpers shared by the integration tests.

/// Asserts that `msg` contains every one of `needles`, naming the first one missing.
#[track_caller]
pub fn assert_mentions(msg: &str, needles: &[&str]) {
    for needle in needles {
        assert!(msg.contains(needle), "`{needle}` missing from: {msg}");
    }
}
