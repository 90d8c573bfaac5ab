//! PDF: the text of each page, after a check that the file's compressed
//! streams stay within the decompression budget.
//!
//! The PDF library inflates a stream whole, with no bound: a 1 MB file can
//! hold a Flate stream of a gigabyte of zeros. So before it sees the file,
//! every stream is inflated here into a counter (nothing is kept), layer by
//! layer for streams compressed twice, and the file is refused when one
//! stream, or all of them together, would pass [`Limits::inflated_cap`].
//! The scan starts at every `stream` keyword and reads as far as the
//! compressed data itself goes, so a `/Length` or an `endstream` that lies
//! does not hide the rest of a stream.
//!
//! An encrypted file is refused: its streams are ciphertext until the
//! library decrypts them, and it decrypts and inflates object streams while
//! loading, so nothing could be checked first. The admin can save an
//! unencrypted copy.

use std::io::{self, Read, Write};

use crate::{collapse, Deadline, ExtractError, Extracted, Limits, Section};

/// Streams compressed inside each other more deeply than this are refused:
/// no writer does it, and each layer multiplies what a byte can become.
const MAX_LAYERS: usize = 3;

pub(crate) fn extract(bytes: &[u8], limits: &Limits, deadline: Deadline) -> Result<Extracted, ExtractError> {
    if !bytes.starts_with(b"%PDF-") {
        return Err(ExtractError::Corrupt("it does not start like a PDF file".into()));
    }
    if contains(&unescaped_names(bytes), b"/Encrypt") {
        return Err(ExtractError::Unsupported(
            "an encrypted PDF; Lore reads unencrypted PDFs only, since an encrypted file's compressed streams cannot be checked before they are decrypted: save an unencrypted copy".into(),
        ));
    }
    check_inflation(bytes, limits.inflated_cap(bytes.len()), deadline)?;
    // The parser can panic on malformed input; that is caught and reported
    // as a corrupt file, like any other parse failure.
    let parsed = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| ExtractError::Corrupt("the PDF structure is damaged".into()))?
        .map_err(|err| ExtractError::Corrupt(format!("the PDF cannot be parsed ({err})")))?;
    let sections = parsed
        .iter()
        .enumerate()
        .map(|(page, text)| Section {
            heading: Some(format!("Page {}", page + 1)),
            text: text.lines().map(collapse).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n"),
        })
        .collect();
    Ok(Extracted { title: None, canonical_url: None, sections })
}

/// Refuses a file whose streams would inflate past `cap` bytes, one stream
/// or all together.
pub(crate) fn check_inflation(bytes: &[u8], cap: u64, deadline: Deadline) -> Result<(), ExtractError> {
    let lzw = contains(&unescaped_names(bytes), b"/LZW");
    let mut total = 0u64;
    for start in stream_starts(bytes) {
        deadline.check()?;
        let data = &bytes[start..];
        let mut size = inflated_size(data, cap)?;
        if lzw {
            // LZW data has no end of its own that survives garbage, so it is
            // read up to the next `endstream` only.
            let end = find(data, b"endstream").unwrap_or(data.len());
            size = size.max(lzw_size(&data[..end], cap)?);
        }
        total = total.saturating_add(size);
        if total > cap {
            return Err(over(cap));
        }
    }
    Ok(())
}

fn over(cap: u64) -> ExtractError {
    ExtractError::OverLimit(format!(
        "its compressed streams expand to more than {} MiB",
        cap.div_ceil(1024 * 1024)
    ))
}

/// Offsets just after each `stream` keyword and its end of line.
fn stream_starts(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let keyword = b"stream";
    let mut from = 0;
    std::iter::from_fn(move || loop {
        let at = from + find(&bytes[from..], keyword)?;
        from = at + keyword.len();
        if bytes[..at].ends_with(b"end") {
            continue;
        }
        let rest = &bytes[from..];
        if rest.starts_with(b"\r\n") {
            return Some(from + 2);
        }
        if rest.starts_with(b"\n") || rest.starts_with(b"\r") {
            return Some(from + 1);
        }
    })
}

/// The size of `data` once inflated (zlib, or raw deflate after a damaged
/// two-byte header, as the library retries), layer by layer; at most `cap`,
/// past which it is an error.
fn inflated_size(data: &[u8], cap: u64) -> Result<u64, ExtractError> {
    let mut largest = 0u64;
    // Each layer is measured by inflating every layer above it again: the
    // layers are few and nothing is held in memory.
    for layers in 1..=MAX_LAYERS + 1 {
        let Some(size) = layered_size(data, layers, cap)? else { break };
        if layers > MAX_LAYERS {
            return Err(ExtractError::OverLimit(format!(
                "a stream is compressed more than {MAX_LAYERS} times over"
            )));
        }
        largest = largest.max(size);
    }
    Ok(largest)
}

/// The size of the `layers`-th inflation of `data`, or `None` when that
/// layer is not compressed data.
fn layered_size(data: &[u8], layers: usize, cap: u64) -> Result<Option<u64>, ExtractError> {
    let mut reader: Box<dyn Read + '_> = match deflate_reader(data) {
        Some(reader) => reader,
        None => return Ok(None),
    };
    for _ in 1..layers {
        let mut head = [0u8; 2];
        if read_exact_or_short(&mut reader, &mut head) < 2 || !is_zlib_header(head) {
            return Ok(None);
        }
        let chained = io::Cursor::new(head).chain(reader);
        reader = Box::new(flate2::read::ZlibDecoder::new(chained));
    }
    let mut counter = Counter { written: 0, cap };
    match io::copy(&mut reader, &mut counter) {
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::FileTooLarge => return Err(over(cap)),
        // Damaged or truncated data: what came out before the damage counts.
        Err(_) => {}
    }
    Ok(Some(counter.written).filter(|&size| size > 0))
}

/// A reader of `data` as the library would inflate it: zlib when the header
/// is valid, raw deflate after the first two bytes otherwise.
fn deflate_reader(data: &[u8]) -> Option<Box<dyn Read + '_>> {
    let head = [*data.first()?, *data.get(1)?];
    if is_zlib_header(head) {
        return Some(Box::new(flate2::read::ZlibDecoder::new(data)));
    }
    Some(Box::new(flate2::read::DeflateDecoder::new(data.get(2..)?)))
}

fn is_zlib_header([cmf, flg]: [u8; 2]) -> bool {
    cmf & 0x0f == 8 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

fn read_exact_or_short(reader: &mut dyn Read, buf: &mut [u8]) -> usize {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    filled
}

fn lzw_size(data: &[u8], cap: u64) -> Result<u64, ExtractError> {
    let mut counter = Counter { written: 0, cap };
    let mut decoder = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
    let result = decoder.into_stream(&mut counter).decode_all(data);
    if let Err(err) = result.status {
        if err.kind() == io::ErrorKind::FileTooLarge {
            return Err(over(cap));
        }
    }
    Ok(counter.written)
}

/// Counts what is written and refuses to go past `cap`.
struct Counter {
    written: u64,
    cap: u64,
}

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written = self.written.saturating_add(buf.len() as u64);
        if self.written > self.cap {
            return Err(io::Error::new(io::ErrorKind::FileTooLarge, "past the decompression budget"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `bytes` with every `#xx` escape decoded, as the PDF library reads names:
/// `/Encr#79pt` is `/Encrypt`. Borrowed when there is none.
fn unescaped_names(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !bytes.contains(&b'#') {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1).and_then(|&b| hex(b)), bytes.get(i + 2).and_then(|&b| hex(b))) {
            (b'#', Some(high), Some(low)) => {
                // Two hex digits make one byte: the value is below 256.
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::{extract_within, Format};

    fn later() -> Deadline {
        Deadline::start(std::time::Duration::from_secs(60))
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    /// A minimal PDF body holding one Flate stream of `content`.
    fn pdf_with_stream(compressed: &[u8]) -> Vec<u8> {
        let mut pdf = b"%PDF-1.4\n1 0 obj\n<< /Length ".to_vec();
        pdf.extend_from_slice(compressed.len().to_string().as_bytes());
        pdf.extend_from_slice(b" /Filter /FlateDecode >>\nstream\n");
        pdf.extend_from_slice(compressed);
        pdf.extend_from_slice(b"\nendstream\nendobj\ntrailer\n<< >>\n%%EOF\n");
        pdf
    }

    #[test]
    fn a_decompression_bomb_is_refused_without_inflating_it() {
        // 256 MiB of zeros in about 250 KB: over the 128 MiB ceiling.
        let zeros = vec![0u8; 1024 * 1024];
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        for _ in 0..256 {
            encoder.write_all(&zeros).unwrap();
        }
        let bomb = pdf_with_stream(&encoder.finish().unwrap());
        let refused = extract_within(Format::Pdf, &bomb, "bomb.pdf", &Limits::default());
        assert!(
            matches!(&refused, Err(ExtractError::OverLimit(why)) if why.contains("expand to more than")),
            "{refused:?}"
        );
    }

    #[test]
    fn a_bomb_behind_a_lying_length_or_a_second_layer_is_still_measured() {
        let cap = 1024 * 1024;
        let big = vec![b'a'; 4 * 1024 * 1024];
        // Compressed twice: the outer layer is small, the inner one is not.
        let twice = pdf_with_stream(&zlib(&zlib(&big)));
        assert!(matches!(check_inflation(&twice, cap, later()), Err(ExtractError::OverLimit(_))));
        // An `endstream` right after the keyword does not end the scan.
        let mut lying = b"%PDF-1.4\n1 0 obj\n<< /Length 0 /Filter /FlateDecode >>\nstream\n".to_vec();
        lying.extend_from_slice(&zlib(&big));
        lying.extend_from_slice(b"\nendstream\nendobj\n");
        assert!(matches!(check_inflation(&lying, cap, later()), Err(ExtractError::OverLimit(_))));
        // Within the budget, several streams pass.
        let small = pdf_with_stream(&zlib(&vec![b'a'; 64 * 1024]));
        assert_eq!(check_inflation(&small, cap, later()), Ok(()));
    }

    #[test]
    fn an_encrypted_pdf_is_refused_before_it_is_decrypted() {
        let mut encrypted = pdf_with_stream(&zlib(b"BT (hello) Tj ET"));
        encrypted.extend_from_slice(b"trailer\n<< /Root 1 0 R /Encrypt 2 0 R >>\n%%EOF\n");
        // A name may spell a letter as #xx: /Encr#79pt is /Encrypt.
        let mut escaped = pdf_with_stream(&zlib(b"BT (hello) Tj ET"));
        escaped.extend_from_slice(b"trailer\n<< /Root 1 0 R /Encr#79pt 2 0 R >>\n%%EOF\n");
        for file in [encrypted, escaped] {
            assert!(matches!(
                extract_within(Format::Pdf, &file, "locked.pdf", &Limits::default()),
                Err(ExtractError::Unsupported(why)) if why.contains("encrypted")
            ));
        }
    }

    #[test]
    fn streams_nested_four_deep_are_refused() {
        let four = pdf_with_stream(&zlib(&zlib(&zlib(&zlib(b"text")))));
        assert!(matches!(
            check_inflation(&four, 1024 * 1024, later()),
            Err(ExtractError::OverLimit(why)) if why.contains("more than 3 times")
        ));
    }
}
