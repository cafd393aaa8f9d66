//! Puts the Functions library (the rl module's commands as `FCALL`s, loaded where the module
//! is absent) in OUT_DIR/rl.lua for `include_str!`: the packaged crate's own copy (`rl.lua`,
//! written by scripts/dist.sh), else the checkout's functions/rl.lua.
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let shipped = dir.join("rl.lua");
    let checkout = dir.join("../../functions/rl.lua");
    let source = if shipped.is_file() { shipped } else { checkout };
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed=rl.lua");
    let text = std::fs::read_to_string(&source).unwrap_or_else(|e| {
        panic!(
            "the Functions library {}: {e} (scripts/build-library.sh builds it)",
            source.display()
        )
    });
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("rl.lua");
    std::fs::write(out, text).expect("writing OUT_DIR/rl.lua");
}
