//! A small reader for the examples' flags: `--n 1000`, `--png`, `--device cpu`.

/// The flags of an example run.
#[derive(Debug, Default, Clone)]
pub struct Args {
    /// `--n N`: the problem size, when given.
    pub n: Option<usize>,
    /// `--png`: write images.
    pub png: bool,
    /// `--reps N`: timed repetitions.
    pub reps: Option<usize>,
}

impl Args {
    /// Reads `std::env::args()`; unknown flags are an error message.
    pub fn from_env() -> Result<Args, String> {
        Self::parse(std::env::args().skip(1))
    }

    /// Reads flags from `args`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
        let mut out = Args::default();
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            let mut number = |flag: &str| -> Result<usize, String> {
                let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
                let v = v.replace('_', "");
                parse_size(&v)
                    .ok_or_else(|| format!("{flag}: `{v}` is not a size (try 1000, 1e6 or 2^20)"))
            };
            match a.as_str() {
                "--n" => out.n = Some(number("--n")?),
                "--reps" => out.reps = Some(number("--reps")?),
                "--png" => out.png = true,
                "-h" | "--help" => {
                    return Err("flags: --n N (problem size), --reps N, --png".into())
                }
                other => {
                    return Err(format!(
                        "unknown flag `{other}`; flags: --n N, --reps N, --png"
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// `1000`, `1e6`, `2^20`.
pub fn parse_size(s: &str) -> Option<usize> {
    if let Some((b, e)) = s.split_once('^') {
        return b.parse::<usize>().ok()?.checked_pow(e.parse().ok()?);
    }
    if let Some((m, e)) = s.split_once(['e', 'E']) {
        return m
            .parse::<usize>()
            .ok()?
            .checked_mul(10usize.checked_pow(e.parse().ok()?)?);
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("1e6"), Some(1_000_000));
        assert_eq!(parse_size("2^20"), Some(1 << 20));
        assert_eq!(parse_size("x"), None);
        let a = Args::parse(["--n".into(), "2^4".into(), "--png".into()]).unwrap();
        assert_eq!(a.n, Some(16));
        assert!(a.png);
        assert!(Args::parse(["--bogus".into()]).is_err());
    }
}
