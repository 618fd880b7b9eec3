"""A command planner for the tests (stdlib only): one JSON line in per step, one out.

It signs up on the form fixture: types "Ada" into the empty Name field, clicks "Create account",
then says it is done. A task that mentions "garbage" gets an answer that is not JSON; one that
mentions "slow" thinks two seconds before every answer; one that mentions "secret" types the
placeholder <secret>name</secret> instead of "Ada", and gives up if it was ever shown the
value the tests give that secret."""
import json
import sys
import time


def element(observation, role, name):
    for e in observation["interactive_elements"]:
        if e["role"] == role and e["name"] == name:
            return e
    return None


SECRET_VALUE = "Ada-Lovelace-1815"

for line in sys.stdin:
    step = json.loads(line)
    if SECRET_VALUE in line:
        print(json.dumps({"give_up": "the planner was shown the secret's value"}), flush=True)
        continue
    observation = step["observation"]
    frame = observation["frame_id"]
    if "slow" in step["task"]:
        time.sleep(2)
    if "garbage" in step["task"]:
        print("this is not an action", flush=True)
        continue
    name = element(observation, "textbox", "Name")
    button = element(observation, "button", "Create account")
    if name and not name.get("value"):
        answer = {"action": {"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": name["ref"]}, "text": "<secret>name</secret>" if "secret" in step["task"] else "Ada", "intent": "fill in the name"}}
    elif button and "Welcome" not in observation["aria_snapshot"]:
        answer = {"action": {"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": button["ref"]}, "intent": "create the account"}}
    else:
        answer = {"done": "signed up as Ada"}
    print(json.dumps(answer), flush=True)
