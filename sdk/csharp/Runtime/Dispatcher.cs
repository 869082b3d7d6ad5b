using System;
using System.Collections.Concurrent;
using System.Threading;

namespace RealSync
{
    /// <summary>Where a live room or lobby applies its events and raises its C# events.</summary>
    public enum LiveDispatch
    {
        /// <summary>
        /// The SynchronizationContext current when the live object was created
        /// (Unity's main thread when created from a MonoBehaviour), or
        /// Immediate when there is none (a console program, a thread-pool thread).
        /// </summary>
        Auto,
        /// <summary>Posted to LiveOptions.Context.</summary>
        Context,
        /// <summary>Queued until the game calls DispatchPending() (e.g. in Update()).</summary>
        Queue,
        /// <summary>On the stream's own background thread, one event at a time, in order.</summary>
        Immediate,
    }

    /// <summary>
    /// Dispatcher runs the live objects' work (applying events to the local
    /// model, then raising the C# events) in order, where LiveDispatch says.
    /// </summary>
    internal sealed class Dispatcher
    {
        readonly LiveDispatch mode;
        readonly SynchronizationContext context;
        readonly ConcurrentQueue<Action> queue = new ConcurrentQueue<Action>();
        readonly object gate = new object();
        readonly Action<Exception> handlerError;
        bool running; // Immediate: work is running (under gate)

        public Dispatcher(LiveDispatch mode, SynchronizationContext context, Action<Exception> handlerError)
        {
            if (mode == LiveDispatch.Auto)
            {
                context = SynchronizationContext.Current;
                mode = context != null ? LiveDispatch.Context : LiveDispatch.Immediate;
            }
            if (mode == LiveDispatch.Context && context == null)
                throw new ArgumentException("LiveDispatch.Context needs LiveOptions.Context");
            this.mode = mode;
            this.context = context;
            this.handlerError = handlerError;
        }

        /// <summary>Post runs work after all the work posted before it.</summary>
        public void Post(Action work)
        {
            switch (mode)
            {
                case LiveDispatch.Queue:
                    queue.Enqueue(work);
                    break;
                case LiveDispatch.Context:
                    // A context may run posts in parallel (the default one does):
                    // the queue keeps them in order, one at a time.
                    queue.Enqueue(work);
                    context.Post(_ => Drain(), null);
                    break;
                default:
                    lock (gate)
                    {
                        queue.Enqueue(work);
                        // Work posted by work running on this thread (a handler that calls Close() or the
                        // client's Dispose()) runs after it, as in the other modes: run at once, the Closed
                        // it posts came before the rest of the event's C# events (Change after Closed).
                        if (running) return;
                        running = true;
                        try
                        {
                            Action next;
                            while (queue.TryDequeue(out next))
                            {
                                try { next(); }
                                catch (Exception e) { if (handlerError != null) handlerError(e); }
                            }
                        }
                        finally { running = false; }
                    }
                    break;
            }
        }

        void Drain()
        {
            lock (gate)
            {
                Action work;
                while (queue.TryDequeue(out work)) work();
            }
        }

        /// <summary>DispatchPending runs the queued work (Queue mode) on the caller's thread; returns how many.</summary>
        public int DispatchPending()
        {
            if (mode == LiveDispatch.Immediate) return 0; // its queue holds only the work posted by running work
            var n = 0;
            lock (gate)
            {
                Action work;
                while (queue.TryDequeue(out work)) { n++; work(); }
            }
            return n;
        }
    }
}
