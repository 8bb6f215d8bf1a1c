//! A text file as the editing tools see it: UTF-8 content with `\n` line breaks, plus
//! the two things about its bytes that must survive a rewrite, the line ending and the
//! byte-order mark.
//!
//! A file is CRLF only when *every* line break is `\r\n`. A file with mixed endings is
//! treated as LF and its stray `\r` characters stay in the text untouched, so a rewrite
//! never changes lines nobody edited. Qwen Code normalised CRLF for matching and
//! rewrote files with LF (its issues #2257 and #2704); here the ending goes back on
//! the way out.

const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineEnding {
    Lf,
    Crlf,
}

/// How a file's bytes are laid out around its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextFormat {
    pub line_ending: LineEnding,
    pub bom: bool,
}

impl TextFormat {
    /// What a new file gets: LF, no BOM.
    pub(crate) const NEW: TextFormat = TextFormat {
        line_ending: LineEnding::Lf,
        bom: false,
    };

    /// The format of existing bytes (valid UTF-8 or not).
    pub(crate) fn detect(bytes: &[u8]) -> TextFormat {
        let bom = bytes.starts_with(BOM);
        let body = if bom { &bytes[BOM.len()..] } else { bytes };
        TextFormat {
            line_ending: detect_line_ending(body),
            bom,
        }
    }

    /// `text` as bytes in this format, without a copy when the format is plain LF.
    pub(crate) fn encode_owned(self, text: String) -> Vec<u8> {
        if self == TextFormat::NEW {
            text.into_bytes()
        } else {
            self.encode(&text)
        }
    }

    /// `text` (with `\n` breaks) as bytes in this format.
    pub(crate) fn encode(self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + text.len() / 32 + BOM.len());
        if self.bom && !text.as_bytes().starts_with(BOM) {
            out.extend_from_slice(BOM);
        }
        match self.line_ending {
            LineEnding::Lf => out.extend_from_slice(text.as_bytes()),
            LineEnding::Crlf => {
                // The exact inverse of `decode`: every `\n` becomes `\r\n`, so a stray
                // `\r` before a break (`\r\r\n` on disk) survives the round trip.
                let mut start = 0;
                for i in memchr::memchr_iter(b'\n', text.as_bytes()) {
                    out.extend_from_slice(&text.as_bytes()[start..i]);
                    out.extend_from_slice(b"\r\n");
                    start = i + 1;
                }
                out.extend_from_slice(&text.as_bytes()[start..]);
            }
        }
        out
    }
}

fn detect_line_ending(body: &[u8]) -> LineEnding {
    // `\n` is one byte in UTF-8 and never part of another character, so the bytes can
    // be scanned without decoding them.
    let mut any = false;
    for i in memchr::memchr_iter(b'\n', body) {
        if i == 0 || body[i - 1] != b'\r' {
            return LineEnding::Lf;
        }
        any = true;
    }
    if any {
        LineEnding::Crlf
    } else {
        LineEnding::Lf
    }
}

/// How many `\n` bytes `bytes` holds (memchr: several gigabytes a second).
pub(crate) fn count_newlines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// A decoded text file: its text with `\n` breaks (when the file is CRLF) and no BOM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextFile {
    pub text: String,
    pub format: TextFormat,
}

impl TextFile {
    /// Decodes bytes that must be UTF-8; `None` when they are not.
    pub(crate) fn decode(bytes: Vec<u8>) -> Option<TextFile> {
        let format = TextFormat::detect(&bytes);
        let mut text = String::from_utf8(bytes).ok()?;
        if format.bom {
            text.drain(..BOM.len());
        }
        if format.line_ending == LineEnding::Crlf {
            text = text.replace("\r\n", "\n");
        }
        Some(TextFile { text, format })
    }

    #[cfg(test)]
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.format.encode(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_bom_round_trip() {
        let bytes = b"\xEF\xBB\xBFa\r\nb\r\n".to_vec();
        let file = TextFile::decode(bytes.clone()).unwrap();
        assert_eq!(file.text, "a\nb\n");
        assert_eq!(
            file.format,
            TextFormat {
                line_ending: LineEnding::Crlf,
                bom: true
            }
        );
        assert_eq!(file.encode(), bytes);
    }

    #[test]
    fn mixed_endings_are_left_alone() {
        let bytes = b"a\r\nb\nc\r\n".to_vec();
        let file = TextFile::decode(bytes.clone()).unwrap();
        assert_eq!(file.format.line_ending, LineEnding::Lf);
        assert_eq!(file.text, "a\r\nb\nc\r\n");
        assert_eq!(file.encode(), bytes);
    }

    #[test]
    fn a_stray_cr_before_a_crlf_break_survives_the_round_trip() {
        let bytes = b"x\r\r\ny\r\n".to_vec();
        let file = TextFile::decode(bytes.clone()).unwrap();
        assert_eq!(file.format.line_ending, LineEnding::Crlf);
        assert_eq!(file.text, "x\r\ny\n");
        assert_eq!(file.encode(), bytes);
    }

    #[test]
    fn invalid_utf8_is_refused() {
        assert_eq!(TextFile::decode(b"a\xFFb".to_vec()), None);
    }
}
