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
    let path = objects.path(&h);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let fresh = Objects::new(objects.dir().to_path_buf());
    let err = fresh.read_content(&h).unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        fresh.read_content(&h),
        Err(StoreError::Missing(_))
    ));
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
