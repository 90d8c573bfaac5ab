//! Records the optimisation level this crate is built at, so that a
//! benchmark's record names the build its numbers come from.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=OPT_LEVEL");
    let level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".to_owned());
    println!("cargo:rustc-env=LORE_OPT_LEVEL={level}");
}
