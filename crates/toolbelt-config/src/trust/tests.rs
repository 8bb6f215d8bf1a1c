use std::path::Path;

use super::*;

fn folders(dir: &Path, rules: &[(&Path, TrustLevel)]) -> TrustedFolders {
    let mut f = TrustedFolders::load(&dir.join("trustedFolders.json")).unwrap();
    for (p, l) in rules {
        f.set(p, *l);
    }
    f
}

#[test]
fn a_trusted_folder_trusts_its_children_and_not_its_siblings() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(tmp.path().join("repo-evil")).unwrap();
    let f = folders(tmp.path(), &[(&repo, TrustLevel::TrustFolder)]);
    assert!(f.decide(&repo).unwrap().trusted);
    assert!(f.decide(&repo.join("sub/deeper")).unwrap().trusted);
    assert_eq!(
        f.decide(&tmp.path().join("repo-evil")),
        None,
        "a prefix of the name is not a parent"
    );
    assert_eq!(f.decide(tmp.path()), None, "the parent is not trusted");
}

#[test]
fn trust_parent_trusts_the_parent_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let f = folders(tmp.path(), &[(&a, TrustLevel::TrustParent)]);
    assert!(
        f.decide(&b).unwrap().trusted,
        "a sibling under the trusted parent"
    );
    assert!(f.decide(tmp.path()).unwrap().trusted);
}

#[test]
fn the_most_specific_rule_wins_and_do_not_trust_covers_children() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let downloads = src.join("downloads");
    std::fs::create_dir_all(downloads.join("x")).unwrap();
    let f = folders(
        tmp.path(),
        &[
            (&src, TrustLevel::TrustFolder),
            (&downloads, TrustLevel::DoNotTrust),
        ],
    );
    assert!(f.decide(&src).unwrap().trusted);
    assert!(!f.decide(&downloads).unwrap().trusted);
    assert!(!f.decide(&downloads.join("x")).unwrap().trusted);
}

#[test]
fn symbolic_links_are_judged_by_where_they_point() {
    let tmp = tempfile::tempdir().unwrap();
    let trusted = tmp.path().join("trusted");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&trusted).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    // A link inside the trusted folder to an untrusted one is not trusted ...
    std::os::unix::fs::symlink(&elsewhere, trusted.join("link")).unwrap();
    // ... and a link to the trusted folder is.
    std::os::unix::fs::symlink(&trusted, tmp.path().join("alias")).unwrap();
    let f = folders(tmp.path(), &[(&trusted, TrustLevel::TrustFolder)]);
    assert_eq!(f.decide(&trusted.join("link")), None);
    assert!(f.decide(&tmp.path().join("alias")).unwrap().trusted);
    // `link/..` is where the kernel takes it: the parent of `elsewhere`, not trusted.
    assert_eq!(f.decide(&trusted.join("link/..")), None);
}

#[test]
fn rules_round_trip_in_qwen_codes_format() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let file = tmp.path().join("home/.qwen/trustedFolders.json");
    let mut f = TrustedFolders::load(&file).unwrap();
    f.set(&repo, TrustLevel::TrustFolder);
    f.save().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let key = std::fs::canonicalize(&repo).unwrap();
    assert_eq!(
        value,
        serde_json::json!({ key.to_str().unwrap(): "TRUST_FOLDER" })
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut again = TrustedFolders::load(&file).unwrap();
    assert!(again.decide(&repo).unwrap().trusted);
    assert!(again.remove(&repo));
    assert!(!again.remove(&repo));
    assert_eq!(again.decide(&repo), None);
}

#[test]
fn an_unknown_level_is_an_error_naming_the_file_and_the_accepted_values() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("trustedFolders.json");
    std::fs::write(&file, r#"{"/x": "TRUST_EVERYTHING"}"#).unwrap();
    let err = TrustedFolders::load(&file).unwrap_err().to_string();
    assert!(err.contains("trustedFolders.json"), "{err}");
    assert!(err.contains("/x"), "{err}");
    assert!(err.contains("TRUST_FOLDER"), "{err}");
    std::fs::write(&file, "[]").unwrap();
    assert!(TrustedFolders::load(&file).is_err());
}
