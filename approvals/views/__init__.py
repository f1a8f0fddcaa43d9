"""The reviewer's pages: one view per page and one per action, each thin.

A view gets the object the user may act on, calls one service, and renders one
partial (htmx) or redirects (no JavaScript). Rules live in approvals/services/.
"""
