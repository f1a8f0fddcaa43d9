"""The kinds of pause besides a plain tool call, each with what its card shows and how it is answered.

question.py: a tool's question (the form from its JSON schema, the answer checked against it); turn.py: a held
model turn's card; checkpoint.py: a workflow checkpoint's card (the run's state at that stage); revision.py:
revision rounds, the same tool or checkpoint proposed again after a reviewer sent it back. Their records are in
approvals/models/, their transitions in approvals/services/ (questions.py, turns.py, turn_decisions.py)."""
