"""Small topic modules the rest of approvals (and its clients) read, with nothing of the domain in them.

hashing.py: canonical JSON and the hashes built on it; text.py: how values read to people; storable.py: what the
database can store, checked before anything is written or queried; rows.py: model instances from the rows of
hand-written SQL, as the ORM builds them (for the one hot read that needs it, services/runnable.py)."""
