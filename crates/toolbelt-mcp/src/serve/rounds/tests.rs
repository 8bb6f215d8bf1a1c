use super::*;

fn waiting(name: &str) -> (Box<Waiting>, oneshot::Receiver<Option<ElicitResult>>) {
    let (_, steps) = mpsc::channel(1);
    let (answer, answered) = oneshot::channel();
    let running = Running {
        call_id: format!("call-{name}"),
        name: name.to_string(),
        arguments: JsonObject::new(),
        steps,
        cancel: CancellationToken::new(),
        progress: ProgressWatch::default(),
    };
    let waiting = Box::new(Waiting {
        running,
        answer,
        since: Instant::now(),
    });
    (waiting, answered)
}

#[test]
fn a_parked_call_is_found_once_under_a_handle_nobody_could_guess() {
    let parked = Parked::default();
    let (first, _a) = waiting("edit");
    let (second, _b) = waiting("write_file");
    let one = parked.park(first).ok().unwrap();
    let two = parked.park(second).ok().unwrap();
    assert_ne!(one, two);
    assert_eq!(one.len(), 32, "128 bits as hex: {one}");
    assert!(parked.take("not-a-handle").is_none());
    assert_eq!(parked.take(&one).unwrap().running.name, "edit");
    assert!(parked.take(&one).is_none(), "a handle answers once");
    assert_eq!(parked.len(), 1);
}

#[test]
fn no_more_than_the_limit_wait_and_questions_given_up_on_make_room() {
    let parked = Parked::default();
    let mut open = Vec::new();
    for i in 0..MAX_PARKED {
        let (w, answered) = waiting(&format!("t{i}"));
        parked.park(w).ok().unwrap();
        open.push(answered);
    }
    let (extra, _answered) = waiting("extra");
    let refused = parked.park(extra).err().unwrap();
    assert_eq!(refused.running.name, "extra");
    // A call that stopped waiting (its approver timed out or the call ended) frees its
    // place at the next park.
    drop(open.pop());
    let (extra, _answered) = waiting("extra");
    assert!(parked.park(extra).is_ok());
    assert_eq!(parked.len(), MAX_PARKED);
}

#[test]
fn an_answer_is_an_elicitation_result_or_nothing() {
    let mut responses = InputResponses::new();
    responses.insert(
        CONFIRM_KEY.to_string(),
        serde_json::json!({"action": "accept", "content": {"always": true}}),
    );
    responses.insert("other".to_string(), serde_json::json!({"roots": []}));
    let answer = answer_in(&responses, CONFIRM_KEY).unwrap();
    assert_eq!(answer.action, ElicitationAction::Accept);
    assert_eq!(answer.content.unwrap()["always"], true);
    assert!(answer_in(&responses, "other").is_none(), "not an answer");
    assert!(answer_in(&responses, "missing").is_none());
}
