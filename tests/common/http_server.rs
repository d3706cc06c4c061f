//! A small HTTP/1.1 server on loopback for `http://` operands: it serves objects from memory,
//! honours `HEAD`, `Range`, `If-Match` and `If-Unmodified-Since` as a web server or S3 does,
//! and injects the faults a test asks for (503s, connections cut mid-range, the object
//! replaced between two range GETs). It stops when dropped.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// An object as served: its bytes and the validators sent with them.
#[derive(Clone)]
pub struct Served {
    pub body: Arc<Vec<u8>>,
    pub etag: Option<String>,
    /// An HTTP date, or none.
    pub last_modified: Option<String>,
}

impl Served {
    /// An object with an ETag made from `version`, and no modification time.
    pub fn with_etag(body: Vec<u8>, version: u32) -> Served {
        Served {
            body: Arc::new(body),
            etag: Some(format!("\"v{version}\"")),
            last_modified: None,
        }
    }

    /// An object without an ETag, modified at `date` (an HTTP date).
    pub fn with_date(body: Vec<u8>, date: &str) -> Served {
        Served {
            body: Arc::new(body),
            etag: None,
            last_modified: Some(date.into()),
        }
    }
}

/// What the next range GETs of an object meet instead of its bytes.
#[derive(Clone)]
pub enum Fault {
    /// None: the GET is answered as usual (to let a fault meet a later GET).
    Pass,
    /// A `503 Service Unavailable`.
    Unavailable,
    /// The headers and half the range, then the connection is closed.
    CutMidRange,
    /// The object is replaced by this one before the GET is answered.
    Replace(Served),
}

#[derive(Default)]
struct State {
    objects: HashMap<String, Served>,
    faults: HashMap<String, VecDeque<Fault>>,
    /// Range GETs answered so far (faults included).
    range_gets: usize,
    /// Bytes of bodies sent so far, by path: how often a client read an object.
    bytes_served: HashMap<String, u64>,
    /// `If-Match` and `If-Unmodified-Since` ignored, as by a server that does not know them.
    ignore_conditions: bool,
}

pub struct HttpServer {
    pub port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    accept: Option<thread::JoinHandle<()>>,
}

impl HttpServer {
    /// Starts serving on a free port of 127.0.0.1.
    pub fn start() -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (state, stop) = (state.clone(), stop.clone());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let state = state.clone();
                    thread::spawn(move || serve(stream, &state));
                }
            })
        };
        HttpServer {
            port,
            state,
            stop,
            accept: Some(accept),
        }
    }

    /// The URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn put(&self, path: &str, object: Served) {
        self.state
            .lock()
            .unwrap()
            .objects
            .insert(path.into(), object);
    }

    /// The next range GETs of `path` meet `faults`, one each, in order.
    pub fn inject(&self, path: &str, faults: impl IntoIterator<Item = Fault>) {
        let mut state = self.state.lock().unwrap();
        state.faults.entry(path.into()).or_default().extend(faults);
    }

    pub fn ignore_conditions(&self) {
        self.state.lock().unwrap().ignore_conditions = true;
    }

    pub fn range_gets(&self) -> usize {
        self.state.lock().unwrap().range_gets
    }

    /// The bytes of `path`'s bodies sent so far (a body cut short counts what was sent).
    pub fn bytes_served(&self, path: &str) -> u64 {
        let state = self.state.lock().unwrap();
        state.bytes_served.get(path).copied().unwrap_or(0)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Answers the requests of one connection (kept alive, as clients pool them).
fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone a socket"));
    let mut out = stream;
    loop {
        let mut request = String::new();
        match reader.read_line(&mut request) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
        let mut parts = request.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if !answer(&mut out, state, method, path, &headers) {
            return;
        }
    }
}

/// Writes the answer to one request; false when the connection is to be closed.
fn answer(
    out: &mut TcpStream,
    state: &Mutex<State>,
    method: &str,
    path: &str,
    headers: &HashMap<String, String>,
) -> bool {
    let range = headers.get("range").and_then(|r| parse_range(r));
    let (object, fault, ignore) = {
        let mut state = state.lock().unwrap();
        let fault = match (method, range) {
            ("GET", Some(_)) => {
                state.range_gets += 1;
                state.faults.get_mut(path).and_then(VecDeque::pop_front)
            }
            _ => None,
        };
        if let Some(Fault::Replace(new)) = &fault {
            state.objects.insert(path.into(), new.clone());
        }
        (
            state.objects.get(path).cloned(),
            fault,
            state.ignore_conditions,
        )
    };
    let Some(object) = object else {
        return status(out, "404 Not Found");
    };
    if let Some(Fault::Unavailable) = fault {
        return status(out, "503 Service Unavailable");
    }
    let mut validators = String::new();
    if let Some(etag) = &object.etag {
        validators += &format!("ETag: {etag}\r\n");
    }
    if let Some(date) = &object.last_modified {
        validators += &format!("Last-Modified: {date}\r\n");
    }
    let len = object.body.len() as u64;
    if method == "HEAD" {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nAccept-Ranges: bytes\r\n{validators}\r\n"
        );
        return out.write_all(head.as_bytes()).is_ok();
    }
    if !ignore {
        let stale_etag = headers
            .get("if-match")
            .is_some_and(|want| Some(want) != object.etag.as_ref());
        let stale_date = headers
            .get("if-unmodified-since")
            .is_some_and(|since| Some(since) != object.last_modified.as_ref());
        if stale_etag || stale_date {
            return status(out, "412 Precondition Failed");
        }
    }
    let (start, end) = match range {
        Some((start, last)) if start < len => (start, last.min(len - 1) + 1),
        Some(_) => return status(out, "416 Range Not Satisfiable"),
        None => (0, len),
    };
    let body = &object.body[start as usize..end as usize];
    let head = match range {
        Some(_) => format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{}/{len}\r\n{validators}\r\n",
            body.len(),
            end - 1
        ),
        None => format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n{validators}\r\n"),
    };
    if out.write_all(head.as_bytes()).is_err() {
        return false;
    }
    let sent = match fault {
        Some(Fault::CutMidRange) => body.len() / 2,
        _ => body.len(),
    };
    let mut state = state.lock().unwrap();
    *state.bytes_served.entry(path.into()).or_default() += sent as u64;
    drop(state);
    if let Some(Fault::CutMidRange) = fault {
        let _ = out.write_all(&body[..sent]);
        let _ = out.shutdown(std::net::Shutdown::Both);
        return false;
    }
    out.write_all(body).is_ok()
}

/// An answer without a body.
fn status(out: &mut TcpStream, status: &str) -> bool {
    let head = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
    out.write_all(head.as_bytes()).is_ok()
}

/// `bytes=START-LAST` (the only form clients of objects send).
fn parse_range(header: &str) -> Option<(u64, u64)> {
    let (start, last) = header.strip_prefix("bytes=")?.split_once('-')?;
    Some((start.parse().ok()?, last.parse().ok()?))
}
