def ok(trajectory, final_state, task):
    return True
