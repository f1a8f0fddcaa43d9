"""Practice calls: planted mistakes that measure whether reviewers catch what they must (issue 24).

A practice call is a copy of a real recent call of a tool with one realistic mistake that the tool declares
(practice.mistakes.Mistake, in Tool.mistakes). It waits in the queue like any call and is never executed:
approvals/ asks practice.guard before any execution claim and any resumption, and hands each decision on
a practice call to practice.services.practice_settle, which scores it and tells the reviewer at once.
"""
