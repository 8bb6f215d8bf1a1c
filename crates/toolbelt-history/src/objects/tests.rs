use proptest::prelude::*;

use super::*;

fn store() -> (tempfile::TempDir, Objects) {
    let dir = tempfile::tempdir().unwrap();
    let objects = Objects::new(dir.path().join("objects"));
    (dir, objects)
}

#[test]
fn contents_small_and_chunked_come_back_exactly_and_once() {
    let (_dir, objects) = store();
    let mut written = Vec::new();
    let small = b"hello\n".to_vec();
    let h = objects.put_content(&small, &mut written).unwrap();
    assert_eq!(objects.read_content(&h).unwrap(), small);
    assert_eq!(written.len(), 1);
    // A large file: its chunks and its list.
    let large: Vec<u8> = (0..1_000_000u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect();
    let mut written = Vec::new();
    let h = objects.put_content(&large, &mut written).unwrap();
    assert!(written.len() > 2);
    assert_eq!(objects.read_content(&h).unwrap(), large);
    // The same content again writes nothing.
    let mut again = Vec::new();
    objects.put_content(&large, &mut again).unwrap();
    assert!(again.is_empty());
    // One byte changed in the middle: a few new chunks, not the whole file.
    let mut edited = large.clone();
    edited[2_000_000] ^= 1;
    let mut more = Vec::new();
    let h2 = objects.put_content(&edited, &mut more).unwrap();
    assert!(more.len() <= 4, "{} new objects", more.len());
    assert_eq!(objects.read_content(&h2).unwrap(), edited);
}

#[test]
fn a_damaged_object_is_an_error_not_wrong_bytes() {
    let (_dir, objects) = store();
    let mut written = Vec::new();
    let h = objects.put_content(b"the content", &mut written).unwrap();
    // In this process's pack, whose last bytes are the object's.
    let pack = objects.own_pack().unwrap();
    assert_eq!(written, vec![pack.clone()]);
    let mut bytes = std::fs::read(&pack).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    std::fs::write(&pack, &bytes).unwrap();
    let fresh = Objects::new(objects.dir().to_path_buf());
    let err = fresh.read_content(&h).unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    assert_eq!(fresh.location(&h), pack);
    std::fs::remove_file(&pack).unwrap();
    assert!(matches!(
        fresh.read_content(&h),
        Err(StoreError::Missing(_))
    ));
    // A loose object (a store before packs, or one the sweep wrote out), the same.
    let mut loose = Vec::new();
    fresh
        .put_loose(&h, b'r', b"the content", &mut loose)
        .unwrap();
    assert_eq!(loose, vec![objects.path(&h)]);
    let again = Objects::new(objects.dir().to_path_buf());
    assert_eq!(again.read_content(&h).unwrap(), b"the content");
    let mut bytes = std::fs::read(&loose[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    std::fs::write(&loose[0], &bytes).unwrap();
    let damaged = Objects::new(objects.dir().to_path_buf());
    assert!(matches!(
        damaged.read_content(&h),
        Err(StoreError::Damaged { .. })
    ));
}

/// A second process (here a second `Objects`) finds what the first appended to its
/// pack after it last read it, and writes its own objects to a pack of its own.
#[test]
fn another_process_finds_objects_appended_to_a_pack_since_it_last_read_it() {
    let (_dir, first) = store();
    let mut written = Vec::new();
    let a = first.put_content(b"one", &mut written).unwrap();
    let second = Objects::new(first.dir().to_path_buf());
    assert_eq!(second.read_content(&a).unwrap(), b"one");
    let b = first.put_content(b"two", &mut written).unwrap();
    assert_eq!(second.read_content(&b).unwrap(), b"two");
    second.put_content(b"three", &mut written).unwrap();
    assert_ne!(first.own_pack(), second.own_pack());
    let packs = std::fs::read_dir(first.dir()).unwrap().count();
    assert_eq!(packs, 2, "a pack per process, no file per object");
}

proptest! {
    #[test]
    fn chunk_lists_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut text = CHUNKS_HEADER.as_bytes().to_vec();
        text.extend_from_slice(&bytes);
        let _ = parse_chunks(&bytes);
        let _ = parse_chunks(&text);
    }

    #[test]
    fn objects_of_random_bytes_are_errors(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let (_dir, objects) = store();
        let h = ContentHash::of(b"anything");
        let path = objects.path(&h);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut content = MAGIC.to_vec();
        content.extend_from_slice(&bytes);
        std::fs::write(&path, &content).unwrap();
        prop_assert!(objects.read_content(&h).is_err());
        prop_assert!(objects.read_tree(&h).is_err());
    }
}
