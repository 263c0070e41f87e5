//! Architecture-specific variants of a module: the same device crate built a second time for
//! an architecture such as `sm_90a`, whose instructions (`wgmma`, `setmaxnreg`) exist only in
//! PTX for exactly that GPU. The variant's PTX follows the module's own as one comment line,
//! base64-encoded, after any cubins:
//!
//! ```text
//! // kernel-build variant sm_90a LnZlcnNpb24gOC4w...
//! ```
//!
//! `kernel_runtime` loads the variant on the GPU it was built for (`sm_90a`: compute capability
//! 9.0 exactly; `sm_90`: 9.x) and the module's own PTX everywhere else. Device code tells the
//! builds apart by `cfg(target_feature = "sm_90a")`.
//!
//! Each variant is built in a target directory of its own under the device root
//! (`variant-sm_90a/`): the architecture is in every crate's flags, `core`'s too, so one
//! directory for both would rebuild them all at each turn.

use std::path::{Path, PathBuf};

use base64::Engine;

/// The start of each variant's line.
pub const VARIANT_SECTION: &str = "// kernel-build variant ";

/// The line that carries `ptx`, the variant for `arch`.
pub(crate) fn section(arch: &str, ptx: &str) -> String {
    let text = base64::engine::general_purpose::STANDARD.encode(ptx);
    format!("{VARIANT_SECTION}{arch} {text}\n")
}

/// Where the device crates' variant for `arch` is built.
pub(crate) fn target_dir(device_root: &Path, arch: &str) -> PathBuf {
    device_root.join(format!("variant-{arch}"))
}

/// The architectures of `cubin_archs` (`KERNEL_CUBIN_ARCHS`) that the variant for `arch`
/// serves, as the variant is assembled for: its own, where that or its family (`sm_90` for
/// `sm_90a`) is named.
pub(crate) fn cubin_archs(arch: &str, cubin_archs: &[String]) -> Vec<String> {
    let family = arch.trim_end_matches(|c: char| c.is_ascii_lowercase());
    let named = cubin_archs.iter().any(|a| a == arch || a == family);
    match named {
        true => vec![arch.to_string()],
        false => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_is_one_line_of_its_ptx() {
        let line = section("sm_90a", ".version 8.0\n.target sm_90a\n");
        let (head, text) = line.trim_end().rsplit_once(' ').unwrap();
        assert_eq!(head, "// kernel-build variant sm_90a");
        assert!(!text.contains('\n'));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap();
        assert_eq!(decoded, b".version 8.0\n.target sm_90a\n");
    }

    #[test]
    fn a_variant_is_assembled_where_its_family_is_named() {
        let archs = |list: &[&str]| list.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(
            cubin_archs("sm_90a", &archs(&["sm_80", "sm_90"])),
            ["sm_90a"]
        );
        assert_eq!(cubin_archs("sm_90a", &archs(&["sm_90a"])), ["sm_90a"]);
        assert!(cubin_archs("sm_90a", &archs(&["sm_80", "sm_100"])).is_empty());
        assert!(cubin_archs("sm_90a", &[]).is_empty());
    }

    #[test]
    fn each_variant_builds_apart() {
        let root = Path::new("/t/kernel-device");
        assert_eq!(
            target_dir(root, "sm_90a"),
            Path::new("/t/kernel-device/variant-sm_90a")
        );
    }
}
