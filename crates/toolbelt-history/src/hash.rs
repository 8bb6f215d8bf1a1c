//! Content hashes: BLAKE3, 32 bytes, written as 64 lowercase hex digits.
//!
//! A file's content is named by its plain BLAKE3 hash; a tree by the hash of its text
//! under a key of its own (`derive_key`), so no file can be mistaken for a tree.

use std::fmt;

/// A BLAKE3 hash: the name of an object in the store.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ContentHash([u8; 32]);

const TREE_CONTEXT: &str = "toolbelt-history 2026 tree v1";

impl ContentHash {
    /// The hash of a file's bytes (or a link's target, or one chunk of a large file).
    pub fn of(bytes: &[u8]) -> Self {
        ContentHash(*blake3::hash(bytes).as_bytes())
    }

    /// The hash of a tree's text.
    pub(crate) fn of_tree(text: &[u8]) -> Self {
        let mut hasher = blake3::Hasher::new_derive_key(TREE_CONTEXT);
        hasher.update(text);
        ContentHash(*hasher.finalize().as_bytes())
    }

    /// The 32 bytes.
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The hash of these 32 bytes.
    pub(crate) fn from_bytes(bytes: [u8; 32]) -> Self {
        ContentHash(bytes)
    }

    /// 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 15)]));
        }
        s
    }

    /// Reads 64 hex digits (either case); `None` for anything else.
    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Some(ContentHash(out))
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", &self.to_hex()[..12])
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_other_text() {
        let h = ContentHash::of(b"hello");
        assert_eq!(ContentHash::from_hex(&h.to_hex()), Some(h));
        assert_eq!(ContentHash::from_hex(&h.to_hex().to_uppercase()), Some(h));
        assert_eq!(ContentHash::from_hex("abc"), None);
        assert_eq!(ContentHash::from_hex(&"g".repeat(64)), None);
        assert_ne!(ContentHash::of(b"x"), ContentHash::of_tree(b"x"));
    }
}
