//! Hydrates the server-rendered console in the browser. Leptos' hydration
//! script calls `hydrate` once the WASM module has loaded.

// Leptos' views are nested types: the answer panel inside the wizard's
// question step is deeper than the compiler's default of 128 queries when
// the release build lays out its hydration.
#![recursion_limit = "256"]

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
