//! File changes one at a time per process, but never held by a question.
//!
//! Two clients editing one file must not lose either change, so a call that changes
//! files (`edit`, `write_file`, ...) takes the process's turn before its diff is made and
//! keeps it until it has written. A call that must ask its person gives the turn back
//! while the question is open and takes it again when the answer is yes: a person who
//! takes ten minutes to answer must not hold back every other client's edits. What the
//! other clients wrote in the meantime is caught by the edit tools' own check (the file
//! changed after its diff was shown): the approved call then fails with that message and
//! writes nothing, so nothing is lost either way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

/// The turn for file changes of a process, shared by its connections.
pub(super) type FileTurn = Arc<tokio::sync::Mutex<()>>;

/// The turns held by the calls of one connection, by call id.
#[derive(Default)]
pub(super) struct HeldTurns {
    held: Mutex<HashMap<String, OwnedMutexGuard<()>>>,
}

impl HeldTurns {
    /// Waits for the turn and holds it for `call_id`.
    async fn take(&self, turn: &FileTurn, call_id: &str) {
        let guard = turn.clone().lock_owned().await;
        if let Ok(mut held) = self.held.lock() {
            held.insert(call_id.to_string(), guard);
        }
    }

    /// Takes the turn for the whole of `call_id`: the turn (taken again after a
    /// question, too) is given back when the returned value is dropped, also when the
    /// call's future is dropped half-way (a client gone).
    pub(super) async fn take_for_call<'a>(
        &'a self,
        turn: &FileTurn,
        call_id: &'a str,
    ) -> CallTurn<'a> {
        self.take(turn, call_id).await;
        CallTurn {
            held: self,
            call_id,
        }
    }

    /// Gives the turn of `call_id` back (when the call ends, or while it asks); `true`
    /// if it held one.
    pub(super) fn give_back(&self, call_id: &str) -> bool {
        self.held
            .lock()
            .ok()
            .and_then(|mut held| held.remove(call_id))
            .is_some()
    }
}

/// A call's hold on the turn; dropping it gives the turn back.
pub(super) struct CallTurn<'a> {
    held: &'a HeldTurns,
    call_id: &'a str,
}

impl Drop for CallTurn<'_> {
    fn drop(&mut self) {
        self.held.give_back(self.call_id);
    }
}

/// What an approver needs to give a call's turn back while it asks.
#[derive(Clone)]
pub(super) struct TurnWhileAsking {
    pub turn: FileTurn,
    pub held: Arc<HeldTurns>,
}

impl TurnWhileAsking {
    /// Gives the turn of `call_id` back, if it holds one, for the time of `ask`; takes it
    /// again before returning when `proceeds` says the answer lets the call run.
    pub(super) async fn around<T>(
        &self,
        call_id: &str,
        ask: impl Future<Output = T>,
        proceeds: impl Fn(&T) -> bool,
    ) -> T {
        let had = self.held.give_back(call_id);
        let answer = ask.await;
        if had && proceeds(&answer) {
            self.held.take(&self.turn, call_id).await;
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_asking_its_person_lets_another_take_the_turn() {
        let turn = FileTurn::default();
        let held = Arc::new(HeldTurns::default());
        let call = held.take_for_call(&turn, "a").await;
        assert!(turn.try_lock().is_err(), "a holds the turn");
        let asking = TurnWhileAsking {
            turn: turn.clone(),
            held: held.clone(),
        };
        let answer = asking
            .around(
                "a",
                async {
                    // While "a" asks, "b" takes the turn and ends.
                    drop(held.take_for_call(&turn, "b").await);
                    true
                },
                |yes| *yes,
            )
            .await;
        assert!(answer);
        assert!(turn.try_lock().is_err(), "a holds the turn again to write");
        drop(call);
        assert!(turn.try_lock().is_ok());
    }

    #[tokio::test]
    async fn a_refused_call_does_not_take_the_turn_again() {
        let turn = FileTurn::default();
        let held = Arc::new(HeldTurns::default());
        let _call = held.take_for_call(&turn, "a").await;
        let asking = TurnWhileAsking {
            turn: turn.clone(),
            held: held.clone(),
        };
        let answer = asking.around("a", async { false }, |yes| *yes).await;
        assert!(!answer);
        assert!(turn.try_lock().is_ok());
        assert!(!held.give_back("a"));
    }
}

#[cfg(test)]
mod drop_tests {
    use super::*;

    #[tokio::test]
    async fn a_call_dropped_half_way_gives_the_turn_back() {
        let turn = FileTurn::default();
        let held = HeldTurns::default();
        let call = async {
            let _turn = held.take_for_call(&turn, "a").await;
            std::future::pending::<()>().await;
        };
        // The call is polled until it holds the turn and waits, then dropped.
        tokio::select! {
            biased;
            _ = call => unreachable!(),
            _ = tokio::task::yield_now() => {}
        }
        assert!(turn.try_lock().is_ok());
    }
}
