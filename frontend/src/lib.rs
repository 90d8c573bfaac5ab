//! Hydrates the server-rendered console in the browser. Leptos' hydration
//! script calls `hydrate` once the WASM module has loaded.

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
