//! Link options of the `toolbelt` binary: what keeps its memory small (issue 49).
//!
//! - **Relative relocations packed** (`DT_RELR`, `-z pack-relative-relocs`): a
//!   position-independent executable carries one 24-byte entry per pointer the loader
//!   adjusts, 74,000 of them here (1.8 MB), all read at every start, the guardian's
//!   included. Packed they take 22 KB. glibc reads them from 2.36 on, so they are asked
//!   for only when the C library this build links against is that recent (a binary
//!   linked so against an older one would not start).
//! - **The code a session runs, laid out together** (`--symbol-ordering-file`, LLD's):
//!   the kernel maps 64 KiB around each page of code first run, so what is resident
//!   follows how scattered that code is. `link-order.txt` lists the functions that the
//!   usual runs touch (a session, `mcp serve`, `tools list`, `--help`), in the order they
//!   were first run; the linker puts them first, and the rest of the code is never
//!   mapped. `bench/link_order.sh` makes the list anew. Names it does not find (a
//!   function renamed since, a debug build) are skipped, so a stale list costs memory,
//!   never a failed build. Only where the linker is LLD: the default of the pinned Rust
//!   on x86-64 Linux, unless a linker is configured (then nothing is asked).
//!
//! `TOOLBELT_LINK_PLAIN=1` turns both off.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=TOOLBELT_LINK_PLAIN");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    if env::var("TOOLBELT_LINK_PLAIN").is_ok_and(|v| v == "1") {
        return;
    }
    let cfg = |key: &str| env::var(format!("CARGO_CFG_TARGET_{key}")).unwrap_or_default();
    let linux_gnu = cfg("OS") == "linux" && cfg("ENV") == "gnu";
    let native = env::var("HOST").ok() == env::var("TARGET").ok();
    if !linux_gnu || !native {
        return;
    }
    if glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if cfg("ARCH") == "x86_64" && linker_is_rusts_lld() {
        let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let list = std::path::Path::new(&manifest).join("link-order.txt");
        if list.is_file() {
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                list.display()
            );
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}

/// Whether the binary is linked by the LLD that Rust ships, its default on x86-64 Linux
/// since 1.90: no linker configured for the target and no linker flag in `RUSTFLAGS`.
fn linker_is_rusts_lld() -> bool {
    let configured = env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    !configured && !flags.contains("linker")
}

/// Whether this machine's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36") is at least
/// `major.minor`; false when it cannot tell.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.split_whitespace().nth(1) else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    found >= (major, minor)
}
