// docs/GUIDE.md's Unity game class, TicTacToe (taken from the guide by
// run.sh, as written), played by two players against realsyncd: the game
// starts when the second arrives, X takes the top row, both see "X wins!".
// Each move waits until both players have seen the one before.
// Its MonoBehaviour needs UnityEngine, which is not here.
using System;
using System.Threading.Tasks;

static class GuideTest
{
    public static async Task Play(Server s)
    {
        using (var x = new TicTacToe(s.BaseUrl))
        using (var o = new TicTacToe(s.BaseUrl))
        {
            await x.StartAsync("alice");
            await Check.WaitFor(() => x.Status == "Waiting for an opponent…", "alice waits: " + x.Status);
            await o.StartAsync("bob");
            await Until(x, "Your turn.");
            await Until(o, "Their turn.");
            Check.True(!o.CanMove(0), "not bob's turn");
            foreach (var step in new[] { Tuple.Create(x, o, 0), Tuple.Create(o, x, 3), Tuple.Create(x, o, 1), Tuple.Create(o, x, 4) })
            {
                await step.Item1.MoveAsync(step.Item3);
                // both see the move before the next: a status read earlier
                // (the mover's "Your turn." before its own move came back)
                // would let the next move start from a stale board
                await Seen(x, o, step.Item3);
                await Until(step.Item2, "Your turn.");
                await Until(step.Item1, "Their turn.");
            }
            await x.MoveAsync(2);
            await Until(x, "X wins!");
            await Until(o, "X wins!");
            Check.Eq("XXXOO....", x.Board, "alice's board");
            Check.Eq("XXXOO....", o.Board, "bob's board");
            for (var i = 0; i < 9; i++) Check.True(!x.CanMove(i) && !o.CanMove(i), "no move after a win");
        }
    }

    static Task Seen(TicTacToe x, TicTacToe o, int cell) =>
        Check.WaitFor(() => x.Board[cell] != '.' && o.Board[cell] != '.', "both boards show the move at " + cell + " (" + x.Board + ", " + o.Board + ")");

    static Task Until(TicTacToe p, string status) => Check.WaitFor(() => p.Status == status, "status " + status + " (is " + p.Status + ")");
}
