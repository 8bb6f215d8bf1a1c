//! The release and test builds of the binary start its executable segment on a 64 KB
//! boundary (crates/toolbelt/build.rs), where the listed hot code begins: the session's
//! peak RSS moved by up to 6 MiB with where that code fell against the kernel's 64 KB
//! fault-around windows (issue 49, BENCHMARKS.md "Stop 59").

#![allow(clippy::unwrap_used)]

/// Each `PT_LOAD` segment's (flags, virtual address, file offset) of an ELF64 file.
fn load_segments(elf: &[u8]) -> Vec<(u32, u64, u64)> {
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap());
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    assert_eq!(&elf[..5], b"\x7fELF\x02", "an ELF64 file");
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36) as usize, u16_at(0x38));
    (0..usize::from(phnum))
        .map(|i| phoff + i * phentsize)
        .filter(|&ph| u32_at(ph) == 1)
        .map(|ph| (u32_at(ph + 4), u64_at(ph + 16), u64_at(ph + 8)))
        .collect()
}

#[test]
fn the_executable_segment_starts_on_a_64_kib_boundary() {
    // Where build.rs links with its own flags: x86-64 Linux with glibc and Rust's LLD.
    let plain = std::env::var("TOOLBELT_LINK_PLAIN").is_ok_and(|v| v == "1")
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
        || std::env::var("RUSTFLAGS").is_ok_and(|f| f.contains("linker"));
    if !cfg!(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "gnu"
    )) || plain
    {
        return;
    }
    let elf = std::fs::read(env!("CARGO_BIN_EXE_toolbelt")).unwrap();
    let segments = load_segments(&elf);
    let executable: Vec<_> = segments
        .iter()
        .filter(|(flags, ..)| flags & 1 != 0)
        .collect();
    assert_eq!(executable.len(), 1, "{segments:x?}");
    let (_, vaddr, offset) = executable[0];
    assert_eq!((vaddr % 65536, offset % 65536), (0, 0), "{segments:x?}");
}
