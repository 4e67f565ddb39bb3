//! A file sent in chunks (redteam-3 D13): the body of an asset reads the next chunk only when
//! hyper asks for it, which it does once the previous one went out to the socket, so a
//! connection holds one chunk however large the file and however slow the client. A 200 MB
//! asset for twelve slow clients once cost 2.4 GB read whole per request.
//!
//! The file is read through tokio's file type, whose reads run on the runtime's blocking
//! threads one chunk at a time: a slow client holds no thread while it waits.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, SizeHint};
use tokio::io::{AsyncRead, ReadBuf};

/// Bytes read per chunk.
pub(super) const CHUNK: usize = 64 * 1024;

/// The rest of an open file as a response body of known length.
pub(super) struct FileBody {
    file: tokio::fs::File,
    /// Bytes still to send (the length when it was opened: a file that a rebuild replaced
    /// keeps its old contents open, so this stays true).
    left: u64,
    buf: Box<[u8]>,
}

impl FileBody {
    /// Sends `len` bytes of `file` from where it stands.
    pub(super) fn new(file: std::fs::File, len: u64) -> Self {
        FileBody {
            file: tokio::fs::File::from_std(file),
            left: len,
            buf: vec![0; CHUNK].into_boxed_slice(),
        }
    }
}

impl Body for FileBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if this.left == 0 {
            return Poll::Ready(None);
        }
        let want = usize::try_from(this.left).map_or(CHUNK, |left| left.min(CHUNK));
        let mut read = ReadBuf::new(&mut this.buf[..want]);
        match Pin::new(&mut this.file).poll_read(cx, &mut read) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) if read.filled().is_empty() => Poll::Ready(Some(Err(
                io::Error::new(io::ErrorKind::UnexpectedEof, "the file got shorter"),
            ))),
            Poll::Ready(Ok(())) => {
                let chunk = Bytes::copy_from_slice(read.filled());
                this.left -= chunk.len() as u64;
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}
