//! What the panic hook saw of the last panic on this thread: its message and location.
//!
//! `catch_unwind` hands back only the payload; the location the generator needs (the block's
//! line) is only known to the panic hook. So `lab` wraps the hook once to keep the last panic
//! of each thread here. The runner reads it after a chapter panicked; `lab.seeds` carries it
//! from the worker thread where a run panicked to the block's thread, before unwinding there.
//! Both use this module, which uses neither.

use std::cell::RefCell;
use std::panic::{self, PanicHookInfo};
use std::sync::Once;

use lab_protocol::Panic;

/// A panic as the hook saw it, before the runner knows which block was running.
#[derive(Debug)]
pub(crate) struct PanicSeen {
    message: String,
    file: String,
    line: u32,
    column: u32,
}

impl PanicSeen {
    fn from_hook(info: &PanicHookInfo<'_>) -> Self {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "Box<dyn Any>".to_owned());
        let (file, line, column) = info.location().map_or((String::new(), 0, 0), |l| {
            (l.file().to_owned(), l.line(), l.column())
        });
        PanicSeen {
            message,
            file,
            line,
            column,
        }
    }

    /// A panic that bypassed the hook (another hook was installed over ours).
    pub(crate) fn unknown() -> Self {
        PanicSeen {
            message: "panic".to_owned(),
            file: String::new(),
            line: 0,
            column: 0,
        }
    }

    /// The same panic, its message prefixed with `context` and `: `.
    pub(crate) fn in_context(mut self, context: &str) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// The panic as the results file records it, in block `block`.
    pub(crate) fn into_panic(self, block: usize) -> Panic {
        let PanicSeen {
            message,
            file,
            line,
            column,
        } = self;
        Panic {
            message,
            file,
            line,
            column,
            block,
        }
    }
}

thread_local! {
    // Thread-local rather than a global: the panic is caught on the thread that raised it, and
    // parallel tests (or a chapter's own threads) cannot overwrite each other's records.
    static LAST_PANIC: RefCell<Option<PanicSeen>> = const { RefCell::new(None) };
}

/// Wraps the current panic hook once: record the panic, then print it as usual.
pub(crate) fn install_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            put(PanicSeen::from_hook(info));
            previous(info);
        }));
    });
}

/// Forgets this thread's last panic.
pub(crate) fn clear() {
    let _ = LAST_PANIC.try_with(|last| last.replace(None));
}

/// This thread's last panic, if the hook saw one since the last `take` or `clear`.
pub(crate) fn take() -> Option<PanicSeen> {
    LAST_PANIC.try_with(|last| last.take()).ok().flatten()
}

/// Makes `seen` this thread's last panic, as if the hook had seen it here: for a panic that
/// is re-raised with `resume_unwind`, which does not call the hook.
pub(crate) fn put(seen: PanicSeen) {
    // `try_with`: a panic during thread teardown must not panic again in the hook.
    let _ = LAST_PANIC.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = Some(seen);
        }
    });
}
