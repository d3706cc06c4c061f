//! The bytes of any object with the buffer protocol (`bytes`, `bytearray`, `memoryview`,
//! `array.array`, NumPy arrays, `mmap`), read in place without a copy.
//!
//! PyO3 offers the buffer protocol only where it is part of the stable ABI, Python 3.11 and
//! later, and this module is built for the stable ABI of 3.9 (one wheel for every CPython
//! from 3.9 on). The protocol itself is older: `PyObject_GetBuffer` and `PyBuffer_Release` are
//! exported by every CPython 3, and the `Py_buffer` struct has had the layout below since 3.3 —
//! 3.11 only wrote into the stable ABI the layout that had not changed since (see `pybuffer.h`:
//! "Py_buffer struct layout and size is now part of the stable abi3"). So we declare the two
//! functions and the struct ourselves, exactly as `pybuffer.h` does.

use std::ffi::{c_char, c_int, c_void};
use std::marker::PhantomData;

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi::{Py_ssize_t, PyObject};
use pyo3::prelude::*;
use pyo3::types::PyString;

/// `Py_buffer` of `pybuffer.h`.
#[repr(C)]
struct RawBuffer {
    buf: *mut c_void,
    obj: *mut PyObject,
    len: Py_ssize_t,
    itemsize: Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut Py_ssize_t,
    strides: *mut Py_ssize_t,
    suboffsets: *mut Py_ssize_t,
    internal: *mut c_void,
}

/// `PyBUF_SIMPLE`: one C-contiguous run of bytes, or an error of the exporter's choice
/// (`BufferError` from a `memoryview`, `ValueError` from NumPy).
const PYBUF_SIMPLE: c_int = 0;

/// `PyBUF_FULL_RO`: any buffer, strided or not, which every exporter can give.
const PYBUF_FULL_RO: c_int = 0x011c;

unsafe extern "C" {
    fn PyObject_GetBuffer(obj: *mut PyObject, view: *mut RawBuffer, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut RawBuffer);
}

/// The bytes an object exports, held until this is dropped. While it is held the exporter
/// cannot resize or free them (a `bytearray` refuses to grow, say), which is what makes
/// [`Bytes::as_slice`] sound without the GIL.
pub struct Bytes<'py> {
    /// Boxed: CPython may keep pointers into the struct (`shape`, `strides` of the simple
    /// case point at its own fields), so it must not move.
    raw: Box<RawBuffer>,
    /// Released with the GIL held: not `Send`, and tied to the token it was taken with.
    _gil: PhantomData<(Python<'py>, *mut ())>,
}

impl<'py> Bytes<'py> {
    /// The bytes of `obj`: a `TypeError` for a `str` (as `hashlib` says it) or an object
    /// without the buffer protocol, a `BufferError` for a buffer that is not contiguous,
    /// whichever exception its exporter raised ([`not_contiguous`]).
    pub fn of(obj: &Bound<'py, PyAny>) -> PyResult<Bytes<'py>> {
        if obj.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "Strings must be encoded before hashing",
            ));
        }
        // SAFETY: all-zero is a valid `Py_buffer` (null pointers, zero lengths), and
        // PyObject_GetBuffer fills it in or leaves it unused.
        let mut raw: Box<RawBuffer> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `obj` is a live object and we hold the GIL (`Bound<'py, _>`); `raw` is a
        // `Py_buffer` of the layout CPython expects (see the module's documentation).
        if unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *raw, PYBUF_SIMPLE) } != 0 {
            return Err(not_contiguous(obj, PyErr::fetch(obj.py())));
        }
        Ok(Bytes {
            raw,
            _gil: PhantomData,
        })
    }

    /// The bytes. The slice may be read without the GIL: the export pins the memory. Another
    /// Python thread may still write into a mutable buffer meanwhile, as it may while
    /// `hashlib` hashes it; the digest of bytes changed during `update` is then unspecified.
    pub fn as_slice(&self) -> &[u8] {
        if self.raw.len <= 0 || self.raw.buf.is_null() {
            return &[];
        }
        // SAFETY: with PyBUF_SIMPLE, `buf` points at `len` contiguous bytes that stay valid
        // until PyBuffer_Release (in `drop`), which the borrow of `self` outlives.
        unsafe { std::slice::from_raw_parts(self.raw.buf as *const u8, self.raw.len as usize) }
    }
}

/// `refused`, the exporter's refusal of a simple buffer, as a `BufferError` (with `refused` as
/// its cause) if `obj` does export a strided one: then the bytes are there but not in one
/// run, and the one documented exception for that is better than each exporter's own.
fn not_contiguous(obj: &Bound<'_, PyAny>, refused: PyErr) -> PyErr {
    // SAFETY: as in `Bytes::of`; a view filled in is released at once.
    let mut raw: Box<RawBuffer> = Box::new(unsafe { std::mem::zeroed() });
    if unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *raw, PYBUF_FULL_RO) } != 0 {
        // Not even a strided buffer: the exporter's own error says why.
        PyErr::fetch(obj.py());
        return refused;
    }
    unsafe { PyBuffer_Release(&mut *raw) };
    let err = PyBufferError::new_err(
        "the buffer is not contiguous: pass a contiguous copy (bytes(view), numpy.ascontiguousarray(a))",
    );
    err.set_cause(obj.py(), Some(refused));
    err
}

impl Drop for Bytes<'_> {
    fn drop(&mut self) {
        // SAFETY: the buffer was filled by a successful PyObject_GetBuffer and is released once;
        // `Bytes` is not `Send` and lives within the GIL token's lifetime, so the GIL is held.
        unsafe { PyBuffer_Release(&mut *self.raw) }
    }
}
