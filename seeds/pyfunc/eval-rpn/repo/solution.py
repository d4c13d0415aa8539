def eval_rpn(tokens):
    """Evaluate integer Reverse Polish Notation tokens (+ - * /, division truncating toward 0)."""
    raise NotImplementedError
