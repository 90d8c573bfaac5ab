//! The engine's floors only point down (ARCHITECTURE.md, "Engine floors"):
//! a module imports modules of its own floor or of floors below, never of
//! a floor above, so no circle of imports spans two floors. Read off the
//! sources: every `crate::<module>` path outside test code.

use std::collections::BTreeMap;
use std::path::Path;

/// Each top-level module of `engine/src` and its floor. The ground floor
/// (settings, store, audit, secrets, trace, logbook, fetch) is the crate
/// `lore-core` now, below the engine, where the compiler keeps it from
/// reaching up. `lib.rs` (the `Lore` handle that wires the floors together),
/// `cluster.rs` (what that handle holds in memory, and `Lore::announce`,
/// which every floor calls when it changes something a replica holds) and
/// `error.rs` (the crate's error, one variant per floor's error) stand
/// beside the floors.
const FLOORS: &[(&str, u8)] = &[
    // 1. Records and settings.
    ("auth", 1),
    ("extract", 1),
    ("appdb", 1),
    // 2. Models, corpus and index.
    ("providers", 2),
    ("embed", 2),
    ("chunk", 2),
    ("index", 2),
    ("corpus", 2),
    ("retrieve", 2),
    // 3. Ingest lifecycle and jobs.
    ("sources", 3),
    ("ingest", 3),
    ("tuning", 3),
    ("profile", 3),
    ("search", 3),
    ("rerank", 3),
    ("shadow", 3),
    ("judging", 3),
    // 4. Answer.
    ("answer", 4),
    ("readiness", 4),
    ("keys", 4),
    ("recorder", 4),
    ("metrics", 4),
    ("wizard", 4),
    ("evals", 4),
    // 5. The operations API and the tool server, over everything.
    ("operations", 5),
    ("resources", 5),
    ("mcp", 5),
];

fn floor(module: &str) -> Option<u8> {
    FLOORS.iter().find(|(name, _)| *name == module).map(|(_, floor)| *floor)
}

/// `crate::<module>` paths in `text`, test modules left out.
fn imports(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.match_indices("crate::")
        .map(|(at, _)| {
            code[at + "crate::".len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect()
        })
        .filter(|name: &String| !name.is_empty())
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_a_floor_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upward: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = 0;
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "error" || module == "cluster" {
            continue;
        }
        let own = floor(&module).unwrap_or_else(|| panic!("engine/src/{module} has no floor in FLOORS"));
        seen += 1;
        for import in imports(&std::fs::read_to_string(&file).unwrap()) {
            if let Some(theirs) = floor(&import) {
                if theirs > own {
                    upward.entry(relative.display().to_string()).or_default().push(import);
                }
            }
        }
    }
    assert!(seen > 30, "the engine's sources were not found ({seen} files)");
    assert!(upward.is_empty(), "modules importing a floor above their own: {upward:#?}");
}
