//! The tree parser against generated input: what `encode` writes reads back the same,
//! and any bytes (random, or a valid tree damaged) are an error or a tree, never a
//! panic, and never a name that could leave its directory.

use proptest::prelude::*;

use super::*;

fn leaf() -> impl Strategy<Value = Leaf> {
    (
        prop_oneof![
            Just(EntryKind::File),
            Just(EntryKind::Link),
            Just(EntryKind::Dir),
            Just(EntryKind::Omitted)
        ],
        0u32..=0o7777,
        any::<u64>(),
        any::<i64>(),
        any::<i64>(),
        any::<u64>(),
        any::<[u8; 32]>(),
    )
        .prop_map(|(kind, mode, size, mtime_ns, ctime_ns, ino, hash)| Leaf {
            kind,
            mode,
            size,
            mtime_ns,
            ctime_ns,
            ino,
            hash: ContentHash::of(&hash),
        })
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 1..20)
        .prop_filter("a valid name", |n| check_name(n).is_ok())
}

fn entries() -> impl Strategy<Value = Vec<TreeEntry>> {
    proptest::collection::btree_map(name(), leaf(), 0..20).prop_map(|m| {
        m.into_iter()
            .map(|(name, leaf)| TreeEntry { name, leaf })
            .collect()
    })
}

proptest! {
    #[test]
    fn what_is_encoded_parses_back(entries in entries()) {
        let text = encode(&entries);
        prop_assert_eq!(parse(&text), Ok(entries));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut text = HEADER.as_bytes().to_vec();
        text.extend_from_slice(&bytes);
        let _ = parse(&bytes);
        if let Ok(entries) = parse(&text) {
            for e in entries {
                prop_assert!(check_name(&e.name).is_ok());
            }
        }
    }

    #[test]
    fn damaged_trees_never_panic(
        entries in entries(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in any::<usize>(),
    ) {
        let mut text = encode(&entries);
        for (at, byte) in flips {
            let i = at % text.len();
            text[i] = byte;
        }
        let _ = parse(&text);
        text.truncate(cut % (text.len() + 1));
        if let Ok(parsed) = parse(&text) {
            for e in parsed {
                prop_assert!(check_name(&e.name).is_ok());
            }
        }
    }
}

#[test]
fn names_that_leave_the_directory_are_refused() {
    let line = |name: &str| {
        format!(
            "{HEADER}f 644 1 0 0 0 {} {name}\n",
            ContentHash::of(b"x").to_hex()
        )
    };
    for name in ["..", ".", "a%2Fb", "%00", "..%2F..%2Fetc"] {
        assert!(parse(line(name).as_bytes()).is_err(), "{name}");
    }
    assert!(parse(line("a b%25").as_bytes()).is_ok());
    let two = format!(
        "{HEADER}f 644 1 0 0 0 {h} b\nf 644 1 0 0 0 {h} a\n",
        h = ContentHash::of(b"x").to_hex()
    );
    let err = parse(two.as_bytes()).unwrap_err();
    assert_eq!(err.line, 3, "{err}");
}
