//! Splitting a Markdown file into its YAML front matter and its body.
//!
//! The front matter is the text between a first line `---` and the next line that is
//! `---` (or `...`). Only the split is done here; the YAML itself goes to a real parser
//! (`serde-saphyr`). Line numbers are kept so an error can point into the file.

/// A file split at its front matter.
#[derive(Debug, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML text, without the fences.
    pub yaml: &'a str,
    /// File line number (1-based) of the YAML's first line.
    pub yaml_first_line: usize,
    /// The Markdown after the closing fence.
    pub body: &'a str,
}

/// Why a file has no usable front matter.
#[derive(Debug, PartialEq, Eq)]
pub enum SplitError {
    /// The file does not start with `---`.
    Missing,
    /// `---` opens it but nothing closes it; the line of the opening fence.
    Unclosed,
}

/// Splits `text` (a leading byte-order mark and `\r\n` line ends are accepted).
pub fn split(text: &str) -> Result<Split<'_>, SplitError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(SplitError::Missing)?;
    if first.trim_end() != "---" {
        return Err(SplitError::Missing);
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = &text[yaml_start..offset];
            let body = &text[offset + line.len()..];
            return Ok(Split {
                yaml,
                yaml_first_line: 2,
                body,
            });
        }
        offset += line.len();
    }
    Err(SplitError::Unclosed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_yaml_from_body() {
        let s = split("---\nname: a\n---\nbody\n").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(s.yaml, "name: a\n");
        assert_eq!(s.body, "body\n");
        assert_eq!(s.yaml_first_line, 2);
    }

    #[test]
    fn accepts_crlf_and_bom() {
        let s = split("\u{feff}---\r\nname: a\r\n---\r\nbody").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(s.yaml, "name: a\r\n");
        assert_eq!(s.body, "body");
    }

    #[test]
    fn missing_and_unclosed_are_errors() {
        assert_eq!(split("# title\n"), Err(SplitError::Missing));
        assert_eq!(split(""), Err(SplitError::Missing));
        assert_eq!(split("---\nname: a\n"), Err(SplitError::Unclosed));
    }
}
