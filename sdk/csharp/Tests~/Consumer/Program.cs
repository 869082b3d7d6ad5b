// A console program that uses the C# SDK as a game would: compiled against
// the built RealSync.dll only (mcs -r:RealSync.dll Program.cs), never the
// SDK's sources. Against a running realsyncd it signs in two guests, creates
// a room, follows it with a LiveRoom, and exits 0 once the live copy has seen
// the second player join and the state patch; 1 on any failure or after 20 s.
// usage: mono Program.exe http://localhost:8080
using System;
using System.Collections.Generic;
using System.Threading.Tasks;
using RealSync;

static class Program
{
    // Main ends with Environment.Exit, not a return: see the README's
    // "Use from a console program" (Mono's exit can wait up to a minute).
    static void Main(string[] args)
    {
        Environment.Exit(Consume(args.Length > 0 ? args[0] : "http://localhost:8080"));
    }

    static int Consume(string baseUrl)
    {
        try
        {
            var run = Run(baseUrl);
            if (!run.Wait(TimeSpan.FromSeconds(20)))
            {
                Console.Error.WriteLine("consumer: timed out");
                return 1;
            }
            return 0;
        }
        catch (AggregateException e)
        {
            Console.Error.WriteLine("consumer: " + e.InnerException);
            return 1;
        }
    }

    static async Task Run(string baseUrl)
    {
        using (var alice = new RealSyncClient(baseUrl))
        using (var bob = new RealSyncClient(baseUrl))
        {
            await alice.GuestAsync("alice");
            await bob.GuestAsync("bob");
            var created = await alice.CreateRoomAsync(new CreateRoomRequest
            {
                Name = "Console game", Mode = "consumer", Region = "eu", MaxPlayers = 4,
            });
            var roomId = created.Room.Id;

            // No SynchronizationContext in a console program: events are raised
            // on the stream's background thread (LiveDispatch.Auto → Immediate).
            var joined = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
            var patched = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
            using (var live = alice.Live(roomId, new LiveOptions { PlayerId = created.PlayerId }))
            {
                live.PlayerJoined += e => joined.TrySetResult(e.Player.Name);
                live.StateChanged += e =>
                {
                    if (live.State.Get("player_2_ready") is bool ready && ready) patched.TrySetResult(true);
                };
                live.Closed += e =>
                {
                    var err = new Exception("stream closed: " + e.ReasonName + " " + e.Error?.Code);
                    joined.TrySetException(err);
                    patched.TrySetException(err);
                };
                live.Start();
                await live.Ready;
                Console.WriteLine("live: " + live.Room.Name + ", " + live.Players.Count + " player");

                var bobIn = await bob.JoinRoomAsync(roomId);
                Console.WriteLine("live: " + await joined.Task + " joined");
                // The default state policy: a player writes its own player_<id>_ keys.
                await bob.PatchStateAsync(roomId, new Dictionary<string, object> { { "player_" + bobIn.PlayerId + "_ready", true } });
                await patched.Task;
                Console.WriteLine("live: state v" + live.StateVersion + " " + Json.Write(live.State) + ", " + live.Players.Count + " players");
                if (live.Players.Count != 2) throw new Exception("want 2 players in the live room, got " + live.Players.Count);
            }
        }
    }
}
