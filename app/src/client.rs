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

    /// POSTs `body` asking for server-sent events, and calls
    /// `on_event(name, data)` for each event as it arrives. A refusal before
    /// the stream starts (an HTTP error) comes back as the error sentence.
    pub async fn stream<B: Serialize>(
        url: &str,
        body: &B,
        mut on_event: impl FnMut(&str, &str),
    ) -> Result<(), String> {
        use wasm_bindgen::{JsCast, JsValue};
        const UNREADABLE: &str = "This browser cannot read a streamed reply.";
        let request = Request::post(url)
            .header("accept", "text/event-stream")
            .json(body)
            .map_err(|err| format!("The request could not be built: {err}"))?;
        let response = request.send().await.map_err(unreachable)?;
        if !response.ok() {
            return read::<serde_json::Value>(response).await.map(|_| ());
        }
        let body: JsValue = response.body().ok_or(UNREADABLE)?.into();
        // The stream's reader, called by name: its web-sys types change
        // between releases, the JavaScript API does not.
        let call = |target: &JsValue, method: &str| -> Result<JsValue, String> {
            let function = js_sys::Reflect::get(target, &JsValue::from_str(method))
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
                .ok_or(UNREADABLE)?;
            function.call0(target).map_err(|_| UNREADABLE.to_owned())
        };
        let reader = call(&body, "getReader")?;
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let read =
                call(&reader, "read")?.dyn_into::<js_sys::Promise>().map_err(|_| UNREADABLE.to_owned())?;
            let chunk = wasm_bindgen_futures::JsFuture::from(read)
                .await
                .map_err(|_| "The reply broke off; please try again.".to_owned())?;
            let field = |name: &str| {
                js_sys::Reflect::get(&chunk, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
            };
            let value = field("value");
            if !value.is_undefined() {
                pending.extend(js_sys::Uint8Array::new(&value).to_vec());
            }
            while let Some(end) = pending.windows(2).position(|pair| pair == b"\n\n") {
                let block: Vec<u8> = pending.drain(..end + 2).collect();
                let block = String::from_utf8_lossy(&block);
                let mut name = "message";
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(event) = line.strip_prefix("event:") {
                        name = event.trim();
                    } else if let Some(line) = line.strip_prefix("data:") {
                        data.push(line.strip_prefix(' ').unwrap_or(line));
                    }
                }
                if !data.is_empty() {
                    on_event(name, &data.join("\n"));
                }
            }
            if field("done").as_bool().unwrap_or(true) {
                return Ok(());
            }
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

    pub async fn stream<B: Serialize>(
        _url: &str,
        _body: &B,
        _on_event: impl FnMut(&str, &str),
    ) -> Result<(), String> {
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
