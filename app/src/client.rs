//! The browser's calls to Lore's JSON endpoints (same origin, session
//! cookie). Errors come back as one sentence with the stable code, ready to
//! show. On the server these are never called: screens load their data after
//! hydration.

use serde::de::DeserializeOwned;
use serde::Serialize;

#[cfg(feature = "hydrate")]
mod browser {
    use gloo_net::http::{Request, Response};

    use super::*;
    use crate::wire::ErrorBody;

    async fn read<T: DeserializeOwned>(response: Response) -> Result<T, String> {
        if response.ok() {
            return response.json().await.map_err(|err| format!("Lore answered nonsense: {err}"));
        }
        let status = response.status();
        match response.json::<ErrorBody>().await {
            Ok(body) => Err(body.error.shown()),
            Err(_) => Err(format!("The request failed with status {status}.")),
        }
    }

    fn unreachable(err: gloo_net::Error) -> String {
        format!("Lore could not be reached: {err}")
    }

    pub async fn get<T: DeserializeOwned>(url: &str) -> Result<T, String> {
        read(Request::get(url).send().await.map_err(unreachable)?).await
    }

    pub async fn send<B: Serialize, T: DeserializeOwned>(
        method: &str,
        url: &str,
        body: &B,
    ) -> Result<T, String> {
        let builder = match method {
            "PUT" => Request::put(url),
            "PATCH" => Request::patch(url),
            "DELETE" => Request::delete(url),
            _ => Request::post(url),
        };
        let request = builder.json(body).map_err(|err| format!("The request could not be built: {err}"))?;
        read(request.send().await.map_err(unreachable)?).await
    }

    /// A request whose success has no content (204).
    pub async fn send_no_content<B: Serialize>(method: &str, url: &str, body: &B) -> Result<(), String> {
        let builder = match method {
            "PUT" => Request::put(url),
            _ => Request::post(url),
        };
        let request = builder.json(body).map_err(|err| format!("The request could not be built: {err}"))?;
        let response = request.send().await.map_err(unreachable)?;
        if response.ok() {
            Ok(())
        } else {
            read::<serde_json::Value>(response).await.map(|_| ())
        }
    }

    /// DELETE without a body; success has no content.
    pub async fn delete(url: &str) -> Result<(), String> {
        let response = Request::delete(url).send().await.map_err(unreachable)?;
        if response.ok() {
            Ok(())
        } else {
            read::<serde_json::Value>(response).await.map(|_| ())
        }
    }

    /// Posts the files chosen in `<input type=file id=input_id>` as the
    /// multipart field `file`.
    pub async fn upload<T: DeserializeOwned>(url: &str, input_id: &str) -> Result<T, String> {
        use wasm_bindgen::JsCast;
        let input = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(input_id))
            .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
            .ok_or("The file field is missing.")?;
        let files = input.files().filter(|f| f.length() > 0).ok_or("Choose a file first.")?;
        let form = web_sys::FormData::new().map_err(|_| "The upload could not be prepared.")?;
        for index in 0..files.length() {
            if let Some(file) = files.get(index) {
                form.append_with_blob_and_filename("file", &file, &file.name())
                    .map_err(|_| "The upload could not be prepared.")?;
            }
        }
        let request =
            Request::post(url).body(form).map_err(|err| format!("The upload could not be built: {err}"))?;
        let result = read(request.send().await.map_err(unreachable)?).await;
        input.set_value("");
        result
    }
}

#[cfg(feature = "hydrate")]
pub use browser::*;

#[cfg(not(feature = "hydrate"))]
mod server {
    use super::*;

    const BROWSER_ONLY: &str = "This loads in the browser.";

    pub async fn get<T: DeserializeOwned>(_url: &str) -> Result<T, String> {
        Err(BROWSER_ONLY.into())
    }

    pub async fn send<B: Serialize, T: DeserializeOwned>(
        _method: &str,
        _url: &str,
        _body: &B,
    ) -> Result<T, String> {
        Err(BROWSER_ONLY.into())
    }

    pub async fn delete(_url: &str) -> Result<(), String> {
        Err(BROWSER_ONLY.into())
    }

    pub async fn send_no_content<B: Serialize>(_method: &str, _url: &str, _body: &B) -> Result<(), String> {
        Err(BROWSER_ONLY.into())
    }

    pub async fn upload<T: DeserializeOwned>(_url: &str, _input_id: &str) -> Result<T, String> {
        Err(BROWSER_ONLY.into())
    }
}

#[cfg(not(feature = "hydrate"))]
pub use server::*;
