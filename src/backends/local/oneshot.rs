//! One answer from the model thread to the request waiting for it. The request
//! dropping its end is how the model thread learns to skip or stop the job.

/// The model thread's end.
pub(crate) struct Sender<T>(async_channel::Sender<T>);

/// The waiting request's end.
pub(crate) struct Receiver<T>(async_channel::Receiver<T>);

/// The model thread went away without answering.
pub(crate) struct Gone;

pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let (sender, receiver) = async_channel::bounded(1);
    (Sender(sender), Receiver(receiver))
}

impl<T> Sender<T> {
    /// Answers; gives the value back when nobody waits any more.
    pub(crate) fn send(self, value: T) -> Result<(), T> {
        self.0.try_send(value).map_err(|error| error.into_inner())
    }

    /// Whether the request stopped waiting.
    pub(crate) fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl<T> Receiver<T> {
    /// The answer, once it comes.
    pub(crate) async fn recv(self) -> Result<T, Gone> {
        self.0.recv().await.map_err(|_| Gone)
    }
}
