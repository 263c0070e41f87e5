//! A generalized ufunc's layout, NumPy's signature `"(m,n),(n)->(m)"`: each operand's core
//! dimensions by name, the inputs before the arrow, the outputs after it.

/// A parsed layout: the dimensions' names in order of first use, and each operand's core
/// dimensions as indices into them.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    pub names: Vec<String>,
    pub inputs: Vec<Vec<usize>>,
    pub outputs: Vec<Vec<usize>>,
}

impl Layout {
    /// Parses `text`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Layout, String> {
        Layout::read(text).map_err(|why| format!("the layout `{text}`: {why}"))
    }

    fn read(text: &str) -> Result<Layout, String> {
        let (ins, outs) = text.split_once("->").ok_or_else(|| {
            "it has no `->`: write the inputs' cores, `->`, the output's, as `\"(n),(n)->()\"`"
                .to_string()
        })?;
        let mut names = Vec::new();
        let inputs = groups(ins, &mut names)?;
        if inputs.is_empty() {
            return Err("a generalized ufunc takes at least one input, as `\"(n)->()\"`".into());
        }
        let outputs = groups(outs, &mut names)?;
        if outputs.is_empty() {
            return Err("it gives no output: write at least one, as `\"(n)->()\"`".into());
        }
        Ok(Layout {
            names,
            inputs,
            outputs,
        })
    }
}

/// The groups `(a,b),(),(c)` of `text`, each as indices into `names`, which gains new names.
fn groups(text: &str, names: &mut Vec<String>) -> Result<Vec<Vec<usize>>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let inner = rest
            .strip_prefix('(')
            .and_then(|r| r.split_once(')'))
            .ok_or_else(|| {
                format!("`{rest}`: each operand's core is a group in parentheses, `(m,n)` or `()`")
            })?;
        let (group, after) = inner;
        out.push(dims(group, names)?);
        rest = after.trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
            if rest.is_empty() {
                return Err("a `,` with no group after it".into());
            }
        } else if !rest.is_empty() {
            return Err(format!("`{rest}` follows a group with no `,` between them"));
        }
    }
    Ok(out)
}

/// The dimensions `m, n` of one group, as indices into `names`.
fn dims(group: &str, names: &mut Vec<String>) -> Result<Vec<usize>, String> {
    if group.trim().is_empty() {
        return Ok(Vec::new());
    }
    let dims: Vec<usize> = group
        .split(',')
        .map(|name| {
            let name = name.trim();
            let ok = name
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_alphanumeric() || c == '_');
            if !ok {
                return Err(format!(
                    "`{name}` is not a dimension's name: names are identifiers, as `n`"
                ));
            }
            Ok(names.iter().position(|n| n == name).unwrap_or_else(|| {
                names.push(name.to_string());
                names.len() - 1
            }))
        })
        .collect::<Result<_, _>>()?;
    if dims.len() > 3 {
        return Err(format!(
            "`({group})` has {} dimensions: a core has at most 3",
            dims.len()
        ));
    }
    Ok(dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_parse_to_indices() {
        let l = Layout::parse("(m, n),(n,p) -> (m,p)").unwrap();
        assert_eq!(l.names, ["m", "n", "p"]);
        assert_eq!(
            (l.inputs, l.outputs),
            (vec![vec![0, 1], vec![1, 2]], vec![vec![0, 2]])
        );
        let l = Layout::parse("(n),()->(n)").unwrap();
        assert_eq!(
            (l.inputs, l.outputs),
            (vec![vec![0], vec![]], vec![vec![0]])
        );
        let l = Layout::parse("(n)->(),(n)").unwrap();
        assert_eq!(l.outputs, vec![vec![], vec![0]]);
        let l = Layout::parse("(n,n)->()").unwrap();
        assert_eq!((l.names.len(), l.inputs), (1, vec![vec![0, 0]]));
    }

    #[test]
    fn malformed_layouts_say_why() {
        let err = |t: &str| Layout::parse(t).unwrap_err();
        assert!(err("(n),(n)").contains("the layout `(n),(n)`: it has no `->`"));
        assert!(err("(n)->").contains("no output"));
        assert!(err("->()").contains("at least one input"));
        assert!(err("(n)(n)->()").contains("`(n)` follows a group with no `,`"));
        assert!(err("n->()").contains("in parentheses"));
        assert!(err("(1)->()").contains("`1` is not a dimension's name"));
        assert!(err("(a,b,c,d)->()").contains("at most 3"));
        assert!(err("(n),->()").contains("no group after it"));
    }
}
