"""What the reviewer's pages are made of besides the views (approvals/views/) and templates.

triage.py: the queue as a triage list (filters, sort, page, similar-call groups); call_panel.py: what one viewer
sees of one call (the context of the call panel partial, for page, htmx response and push alike); forms.py: the
edit form generated from a tool's argument schema; context_processors.py: the queue count in every page."""
