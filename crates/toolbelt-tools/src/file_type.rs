//! What kind of content a file holds, decided from its name and its first bytes, so
//! that images go to the model as images and binary files are named, not dumped.

use std::path::Path;

/// How many leading bytes are sniffed.
pub(crate) const SNIFF_LEN: usize = 8192;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileType {
    Text(TextEncoding),
    /// Sent to the model as inline data with this MIME type (images, audio, video, PDF).
    Media(String),
    Binary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextEncoding {
    /// UTF-8, with or without a byte-order mark; invalid sequences are replaced.
    Utf8 {
        bom: bool,
    },
    Utf16Le,
    Utf16Be,
}

/// Decides the type from the extension, then from `head` (the first bytes).
pub(crate) fn detect(path: &Path, head: &[u8]) -> FileType {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    // TypeScript sources share `.ts`/`.mts`/`.cts` with MPEG transport streams; SVG is
    // text the model reads better as markup.
    let text_ext = matches!(ext.as_deref(), Some("ts" | "mts" | "cts" | "svg"));
    if !text_ext && let Some(mime) = ext.as_deref().and_then(|e| mime_guess::from_ext(e).first()) {
        let essence = mime.essence_str();
        let media = matches!(mime.type_().as_str(), "image" | "audio" | "video")
            || essence == "application/pdf";
        if media {
            return FileType::Media(essence.to_string());
        }
    }
    if head.starts_with(b"\xEF\xBB\xBF") {
        return FileType::Text(TextEncoding::Utf8 { bom: true });
    }
    if head.starts_with(b"\xFF\xFE") {
        return FileType::Text(TextEncoding::Utf16Le);
    }
    if head.starts_with(b"\xFE\xFF") {
        return FileType::Text(TextEncoding::Utf16Be);
    }
    if looks_binary(head) {
        return FileType::Binary;
    }
    FileType::Text(TextEncoding::Utf8 { bom: false })
}

/// A NUL byte, or more than 30% control bytes other than tab, newline, form feed and
/// carriage return.
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    if head.is_empty() {
        return false;
    }
    if head.contains(&0) {
        return true;
    }
    // Counted in byte-wide lanes, 255 bytes at a time (at most one per byte, so a `u8`
    // cannot overflow): the compiler vectorises this 32 bytes a step. A sum into
    // `usize` (and a filter-count) ran a byte a step, a few microseconds per 8 KiB head
    // on every `read_file` call.
    let control: usize = head
        .chunks(255)
        .map(|chunk| {
            usize::from(chunk.iter().fold(0u8, |n, &b| {
                n + u8::from(b < 9) + u8::from(b.wrapping_sub(14) < 18)
            }))
        })
        .sum();
    control * 10 > head.len() * 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_extension_then_content() {
        let p = |s: &str| Path::new(s).to_path_buf();
        assert_eq!(
            detect(&p("a.png"), b"\x89PNG"),
            FileType::Media("image/png".into())
        );
        assert_eq!(
            detect(&p("a.PDF"), b"%PDF"),
            FileType::Media("application/pdf".into())
        );
        assert_eq!(
            detect(&p("a.mp3"), b""),
            FileType::Media("audio/mpeg".into())
        );
        assert_eq!(
            detect(&p("a.ts"), b"let x = 1;"),
            FileType::Text(TextEncoding::Utf8 { bom: false })
        );
        assert_eq!(
            detect(&p("a.svg"), b"<svg/>"),
            FileType::Text(TextEncoding::Utf8 { bom: false })
        );
        assert_eq!(detect(&p("a.bin"), b"\x00\x01\x02"), FileType::Binary);
        assert_eq!(
            detect(&p("noext"), b"\xEF\xBB\xBFhi"),
            FileType::Text(TextEncoding::Utf8 { bom: true })
        );
        assert_eq!(
            detect(&p("u16"), b"\xFF\xFEh\x00"),
            FileType::Text(TextEncoding::Utf16Le)
        );
        assert_eq!(
            detect(&p("a.rs"), "fn main() { \"é\" }".as_bytes()),
            FileType::Text(TextEncoding::Utf8 { bom: false })
        );
    }

    #[test]
    fn control_heavy_content_is_binary() {
        assert!(looks_binary(&[1, 2, 3, b'a']));
        assert!(!looks_binary(b"plain\ttext\r\n"));
        assert!(!looks_binary(b""));
    }

    /// The count is exact across its 255-byte steps: just over 30% is binary, 30% is
    /// not, and a head of nothing but control bytes (every step full) is.
    #[test]
    fn the_control_count_is_exact_over_a_whole_head() {
        let head = |control: usize| {
            let mut bytes = vec![b'a'; SNIFF_LEN];
            for (i, b) in bytes.iter_mut().take(control).enumerate() {
                *b = if i % 2 == 0 { 1 } else { 27 };
            }
            bytes
        };
        let limit = SNIFF_LEN * 3 / 10;
        assert!(!looks_binary(&head(limit)));
        assert!(looks_binary(&head(limit + 1)));
        assert!(looks_binary(&vec![31u8; SNIFF_LEN]));
        assert!(!looks_binary(&vec![b'\t'; SNIFF_LEN]));
    }
}
